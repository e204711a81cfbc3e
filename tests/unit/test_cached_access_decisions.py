"""A request asks the access-decision cache without waiting: a decision already held (by this
request, or by the shared cache for this identity) is answered in the same step, with no loader
batch and no API call; a decision not held is reviewed once, as before."""

from collections.abc import Coroutine
from typing import Any

from kueue_graphql.context.request import LazyIdentity
from kueue_graphql.core.identity import Identity
from kueue_graphql.kube.authz import Access, Authorizer
from kueue_graphql.kube.client import ApiCallMeter
from kueue_graphql.kube.reads import RequestReads
from kueue_graphql.kube.resources import JOB, WORKLOAD
from tests.unit.apiserver_stub import apiserver_stub

GRACE = Identity("grace", groups=("team-a-readers",))
LIST_WORKLOADS = Access("list", WORKLOAD, "team-a")
GET_JOB = Access("get", JOB, "team-b", "other")


def allows_team_a(method: str, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    assert path == "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    return 201, {"status": {"allowed": body["spec"]["resourceAttributes"]["namespace"] == "team-a"}}


def reads_for(authorizer: Authorizer) -> RequestReads:
    async def authenticate() -> Identity:
        return GRACE

    return RequestReads(
        authorizer.client,
        authorizer,
        LazyIdentity(authenticate),
        impersonate=True,
        meter=ApiCallMeter(budget=10),
    )


def finishes_without_waiting(step: Coroutine[Any, Any, bool]) -> bool:
    """The coroutine's answer when it returns on its first step; AssertionError when it waits."""
    try:
        step.send(None)
    except StopIteration as done:
        return bool(done.value)
    step.close()
    raise AssertionError("waited: went through the loader")


async def test_a_held_decision_is_answered_without_a_wait_or_a_call() -> None:
    async with apiserver_stub(allows_team_a) as stub:
        authorizer = Authorizer(stub.kube, self_review=False)
        first = reads_for(authorizer)
        assert await first.identity() == GRACE
        # Not held yet: reviewed (one SubjectAccessReview each), through the loader.
        assert await first.may(LIST_WORKLOADS) is True
        assert await first.may(GET_JOB) is False
        assert len(stub.requests) == 2
        # Held by this request, and by the shared cache for the next request as the caller.
        assert finishes_without_waiting(first.may(LIST_WORKLOADS)) is True
        second = reads_for(authorizer)
        assert await second.identity() == GRACE
        assert finishes_without_waiting(second.may(GET_JOB)) is False
        assert finishes_without_waiting(second.may(LIST_WORKLOADS)) is True
        assert len(stub.requests) == 2
        # What a subscription's periodic re-check asks again: the decisions answered at once too.
        assert second.decisions() == {GET_JOB: False, LIST_WORKLOADS: True}


async def test_before_the_identity_is_known_the_loader_answers() -> None:
    async with apiserver_stub(allows_team_a) as stub:
        authorizer = Authorizer(stub.kube, self_review=False)
        assert await reads_for(authorizer).may(LIST_WORKLOADS) is True
        fresh = reads_for(authorizer)  # its TokenReview (here: a function) not yet made
        assert await fresh.may(LIST_WORKLOADS) is True
        assert len(stub.requests) == 1
        assert fresh.decisions() == {LIST_WORKLOADS: True}
