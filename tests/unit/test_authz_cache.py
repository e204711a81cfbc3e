"""Authorization decisions are cached per complete identity, and only for that identity."""

from typing import Any

from kueue_graphql.context import LiveLimits, LiveRegistry
from kueue_graphql.core.identity import Identity
from kueue_graphql.kube.authz import Access, Authorizer
from kueue_graphql.kube.client import ApiCallMeter
from kueue_graphql.kube.resources import WORKLOAD
from tests.unit.apiserver_stub import apiserver_stub


def grants_team_a_readers(method: str, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    assert path == "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    allowed = "team-a-readers" in body["spec"].get("groups", [])
    return 201, {"status": {"allowed": allowed}}


ACCESS = Access("list", WORKLOAD, "team-a")


async def test_same_identity_is_asked_once() -> None:
    grace = Identity("grace", groups=("engineering", "team-a-readers"))
    async with apiserver_stub(grants_team_a_readers) as stub:
        authorizer = Authorizer(stub.kube, self_review=False)
        meter = ApiCallMeter(budget=10)
        assert await authorizer.allowed(grace, ACCESS, meter)
        assert await authorizer.allowed(grace, ACCESS, meter)
    assert len(stub.requests) == 1
    spec = stub.requests[0].body["spec"]  # type: ignore[index]
    assert spec["user"] == "grace"
    assert spec["groups"] == ["engineering", "team-a-readers"]
    assert spec["resourceAttributes"] == {
        "verb": "list",
        "group": "kueue.x-k8s.io",
        "version": "v1beta2",
        "resource": "workloads",
        "namespace": "team-a",
    }


async def test_a_decision_never_serves_another_identity() -> None:
    grace = Identity("grace", groups=("engineering", "team-a-readers"))
    same_name_fewer_groups = Identity("grace", groups=("engineering",))
    async with apiserver_stub(grants_team_a_readers) as stub:
        authorizer = Authorizer(stub.kube, self_review=False)
        meter = ApiCallMeter(budget=10)
        assert await authorizer.allowed(grace, ACCESS, meter)
        assert not await authorizer.allowed(same_name_fewer_groups, ACCESS, meter)
        other_namespace = Access("list", WORKLOAD, "team-b")
        assert await authorizer.allowed(grace, other_namespace, meter)
    assert len(stub.requests) == 3


async def test_decisions_expire() -> None:
    grace = Identity("grace", groups=("team-a-readers",))
    async with apiserver_stub(grants_team_a_readers) as stub:
        authorizer = Authorizer(stub.kube, self_review=False, ttl_seconds=0.05)
        meter = ApiCallMeter(budget=10)
        await authorizer.allowed(grace, ACCESS, meter)
        import asyncio

        await asyncio.sleep(0.1)
        await authorizer.allowed(grace, ACCESS, meter)
    assert len(stub.requests) == 2


async def test_a_shared_review_outlives_the_asker_that_started_it() -> None:
    """Concurrent askers share one review; when the asker that started it goes away (its
    subscription closed mid-first-answer), the others still get a decision. Before the fix they
    got the starter's CancelledError, and strawberry ended their subscriptions without a
    message (seen under load: one of 30 subscriptions never answered)."""
    import asyncio

    grace = Identity("grace", groups=("team-a-readers",))
    authorizer = Authorizer(None, self_review=False)  # type: ignore[arg-type]
    released = asyncio.Event()
    reviews: list[str] = []

    async def review(identity: Identity, access: Access, meter: ApiCallMeter) -> bool:
        reviews.append(identity.username)
        await released.wait()
        return True

    authorizer._review = review  # type: ignore[method-assign]
    meter = ApiCallMeter(budget=10)
    starter = asyncio.ensure_future(authorizer.allowed(grace, ACCESS, meter))
    await asyncio.sleep(0)
    sharer = asyncio.ensure_future(authorizer.allowed(grace, ACCESS, meter))
    await asyncio.sleep(0)
    assert reviews == ["grace"]  # the second asker waits on the first one's review
    starter.cancel()
    await asyncio.sleep(0)
    released.set()
    assert await asyncio.wait_for(sharer, timeout=30) is True
    assert starter.cancelled()
    # A sharer that is itself cancelled still ends with CancelledError.
    released.clear()
    authorizer._grants.clear()
    first = asyncio.ensure_future(authorizer.allowed(grace, ACCESS, meter))
    await asyncio.sleep(0)
    second = asyncio.ensure_future(authorizer.allowed(grace, ACCESS, meter))
    await asyncio.sleep(0)
    second.cancel()
    released.set()
    assert await first is True
    await asyncio.gather(second, return_exceptions=True)
    assert second.cancelled()


async def test_a_quiet_subscription_reads_its_decisions_from_the_shared_cache() -> None:
    """The re-check of a quiet subscription (graph/subscription.py `_recheck`) reads the
    decisions its answer depended on from the authorizer's cache, which every subscription
    of the identity shares (issue 26: each re-check asked them through a request's reads);
    one not cached (expired) must be asked: None."""
    grace = Identity("grace", groups=("engineering", "team-a-readers"))
    other = Access("list", WORKLOAD, "team-b")
    registry = LiveRegistry(LiveLimits())
    assert registry.decisions_hold(grace, {ACCESS: True}) is None  # no authorizer: ask
    async with apiserver_stub(grants_team_a_readers) as stub:
        authorizer = Authorizer(stub.kube, self_review=False)
        registry = LiveRegistry(LiveLimits(), authorizer=authorizer)
        assert authorizer.cached(grace, ACCESS) is None
        assert registry.decisions_hold(grace, {ACCESS: True}) is None
        meter = ApiCallMeter(budget=10)
        assert await authorizer.allowed(grace, ACCESS, meter)
        nobody = Identity("nobody")
        assert await authorizer.allowed(nobody, ACCESS, meter) is False
        assert authorizer.cached(grace, ACCESS) is True
        assert authorizer.cached(nobody, ACCESS) is False
        assert authorizer.cached(Identity("grace"), ACCESS) is None  # another identity
        assert registry.decisions_hold(grace, {ACCESS: True}) is True
        assert registry.decisions_hold(nobody, {ACCESS: False}) is True
        assert registry.decisions_hold(nobody, {ACCESS: True}) is False  # revoked
        assert registry.decisions_hold(grace, {ACCESS: True, other: True}) is None
    assert len(stub.requests) == 2
