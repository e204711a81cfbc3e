"""The REST layer sends one Impersonate-Group line per group, and never impersonates by default."""

import time

import pytest

from kueue_graphql.core.errors import UnavailableError
from kueue_graphql.core.identity import Identity
from kueue_graphql.kube.client import ApiCallMeter
from kueue_graphql.kube.transport import assert_no_impersonation_defaults
from tests.unit.apiserver_stub import apiserver_stub


def ok(method: str, path: str, body: object) -> tuple[int, dict[str, object]]:
    return 200, {"kind": "Status"}


async def test_every_group_and_extra_is_a_separate_header_line() -> None:
    grace = Identity(
        "grace",
        uid="uid-7",
        groups=("engineering", "team-a-readers", "system:authenticated"),
        extra=(("authentication.kubernetes.io/credential-id", ("JTI=abc", "x")),),
    )
    async with apiserver_stub(ok) as stub:
        await stub.kube.request_json(
            "GET", "/api/v1/namespaces", meter=ApiCallMeter(budget=5), as_identity=grace
        )
    (request,) = stub.requests
    lines = [(k.lower(), v) for k, v in request.headers]
    assert [v for k, v in lines if k == "impersonate-group"] == [
        "engineering",
        "team-a-readers",
        "system:authenticated",
    ]
    assert [v for k, v in lines if k == "impersonate-user"] == ["grace"]
    assert [v for k, v in lines if k == "impersonate-uid"] == ["uid-7"]
    extra = "impersonate-extra-authentication.kubernetes.io%2fcredential-id"
    assert [v for k, v in lines if k == extra] == ["JTI=abc", "x"]


async def test_service_identity_sends_no_impersonation() -> None:
    async with apiserver_stub(ok) as stub:
        await stub.kube.request_json("GET", "/version", meter=ApiCallMeter(budget=5))
    assert not [k for k, _ in stub.requests[0].headers if k.lower().startswith("impersonate-")]


async def test_impersonation_default_header_is_refused() -> None:
    async with apiserver_stub(ok) as stub:
        stub.kube.api_client.default_headers["Impersonate-User"] = "someone"
        with pytest.raises(RuntimeError, match="Impersonate"):
            assert_no_impersonation_defaults(stub.kube.api_client)
        with pytest.raises(RuntimeError, match="Impersonate"):
            await stub.kube.request_json("GET", "/version", meter=ApiCallMeter(budget=5))
        assert stub.requests == []


async def test_budget_stops_calls_before_they_are_sent() -> None:
    meter = ApiCallMeter(budget=1)
    async with apiserver_stub(ok) as stub:
        await stub.kube.request_json("GET", "/version", meter=meter)
        with pytest.raises(Exception, match="more than 1 Kubernetes API calls"):
            await stub.kube.request_json("GET", "/version", meter=meter)
    assert len(stub.requests) == 1


async def test_deadline_stops_calls_before_they_are_sent() -> None:
    import time

    meter = ApiCallMeter(budget=10, deadline=time.monotonic() - 0.1)
    async with apiserver_stub(ok) as stub:
        with pytest.raises(Exception, match="deadline exceeded"):
            await stub.kube.request_json("GET", "/version", meter=meter)
    assert stub.requests == []


async def test_proxy_environment_is_not_consulted(monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy variable pointing nowhere: a session that trusted the environment would send the
    # call there and fail. The kubeconfig (proxy-url) is the only place a proxy comes from.
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    async with apiserver_stub(ok) as stub:
        answer = await stub.kube.request_json("GET", "/version", meter=ApiCallMeter(budget=5))
    assert answer == {"kind": "Status"}
    assert [r.path for r in stub.requests] == ["/version"]


async def test_a_service_account_is_impersonated_by_its_name_alone() -> None:
    # Constrained impersonation (impersonate:serviceaccount) refuses a ServiceAccount sent with
    # a uid, groups or extras; the API server fills in its groups.
    bot = Identity.from_user_info(
        {
            "username": "system:serviceaccount:team-a:ci-bot",
            "uid": "0d5c",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:team-a"],
            "extra": {"authentication.kubernetes.io/credential-id": ["JTI=1"]},
        }
    )
    async with apiserver_stub(ok) as stub:
        await stub.kube.request_json(
            "GET", "/api/v1/namespaces", meter=ApiCallMeter(budget=5), as_identity=bot
        )
    impersonation = [
        (k.lower(), v) for k, v in stub.requests[0].headers if k.lower().startswith("impersonate-")
    ]
    assert impersonation == [("impersonate-user", "system:serviceaccount:team-a:ci-bot")]


async def test_an_empty_group_is_never_sent() -> None:
    # A token file line with an empty group column gives TokenReview groups ["", ...].
    alice = Identity.from_user_info(
        {"username": "alice", "uid": "u1", "groups": ["", "system:authenticated"]}
    )
    assert alice.groups == ("system:authenticated",)
    async with apiserver_stub(ok) as stub:
        await stub.kube.request_json(
            "GET", "/api/v1/namespaces", meter=ApiCallMeter(budget=5), as_identity=alice
        )
    groups = [v for k, v in stub.requests[0].headers if k.lower() == "impersonate-group"]
    assert groups == ["system:authenticated"]


async def test_a_throttled_call_is_retried_after_its_retry_after() -> None:
    answers = iter(
        [
            (429, {"kind": "Status", "code": 429, "details": {"retryAfterSeconds": 0}}),
            (429, {"kind": "Status", "code": 429, "details": {"retryAfterSeconds": 0}}),
            (200, {"kind": "Namespace"}),
        ]
    )

    def throttling(method: str, path: str, body: object) -> tuple[int, dict[str, object]]:
        return next(answers)

    meter = ApiCallMeter(budget=5)
    async with apiserver_stub(throttling) as stub:
        answer = await stub.kube.request_json("GET", "/api/v1/namespaces/a", meter=meter)
    assert answer == {"kind": "Namespace"}
    assert len(stub.requests) == 3
    assert len(meter.calls) == 3  # each attempt is an API call


async def test_throttling_beyond_the_deadline_is_unavailable_without_waiting() -> None:
    def throttling(method: str, path: str, body: object) -> tuple[int, dict[str, object]]:
        return 429, {"kind": "Status", "code": 429, "details": {"retryAfterSeconds": 5}}

    # Retry-After (5 s) lies past the deadline (3 s): answered at once, neither waiting for the
    # retry nor sleeping until the deadline (the bound below is under both, with room for a
    # loaded machine).
    meter = ApiCallMeter(budget=5, deadline=time.monotonic() + 3)
    async with apiserver_stub(throttling) as stub:
        started = time.monotonic()
        with pytest.raises(UnavailableError, match="throttling"):
            await stub.kube.request_json("GET", "/api/v1/namespaces/a", meter=meter)
    assert time.monotonic() - started < 2.5
    assert len(stub.requests) == 1
