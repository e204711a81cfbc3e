"""May this caller do that? SubjectAccessReview, cached per identity for a short time.

A decision is cached under the complete identity (user, uid, every group, every extra) plus
verb, group, resource, namespace and name, so no decision ever serves a different caller. The
TTL is short because RBAC changes must take effect quickly; its only job is to keep a burst of
queries from the same user from asking the same question again. A denial is kept for less time
than a grant (never longer): a user who was just granted access (a new RoleBinding) should not
wait out a cached "no".
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from cachetools import TTLCache

from kueue_graphql.core.errors import UnavailableError
from kueue_graphql.core.identity import Identity
from kueue_graphql.kube.client import ApiCallMeter, ApiStatusError, JsonObject, KubeClient
from kueue_graphql.kube.resources import Resource
from kueue_graphql.kueue.objects import dig
from kueue_graphql.observe.metrics import ACCESS_DECISIONS


@dataclass(frozen=True)
class Access:
    verb: str
    resource: Resource
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None

    def attributes(self) -> JsonObject:
        attributes: JsonObject = {
            "verb": self.verb,
            "group": self.resource.group,
            "version": self.resource.version,
            "resource": self.resource.plural,
        }
        if self.namespace:
            attributes["namespace"] = self.namespace
        if self.name:
            attributes["name"] = self.name
        if self.subresource:
            attributes["subresource"] = self.subresource
        return attributes


DecisionKey = tuple[Identity, str, str, str, str, str, str]


class Authorizer:
    """Asks the API server about access, as SubjectAccessReview (impersonating mode) or
    SelfSubjectAccessReview (local mode, where the service's own identity is the caller)."""

    def __init__(
        self,
        client: KubeClient,
        *,
        self_review: bool,
        ttl_seconds: float = 10.0,
        deny_ttl_seconds: float = 2.0,
        size: int = 10000,
    ) -> None:
        # A denial is never kept longer than a grant.
        deny_ttl_seconds = min(deny_ttl_seconds, ttl_seconds)
        self.client = client
        self.self_review = self_review
        self._grants: TTLCache[DecisionKey, bool] = TTLCache(maxsize=size, ttl=ttl_seconds)
        self._denials: TTLCache[DecisionKey, bool] = TTLCache(maxsize=size, ttl=deny_ttl_seconds)
        # Concurrent requests asking the same question share one review.
        self._in_flight: dict[DecisionKey, asyncio.Future[bool]] = {}

    @staticmethod
    def _key(identity: Identity, access: Access) -> DecisionKey:
        return (
            identity,
            access.verb,
            access.resource.group,
            access.resource.plural,
            access.namespace or "",
            access.name or "",
            access.subresource or "",
        )

    def cached(self, identity: Identity, access: Access) -> bool | None:
        """The decision `allowed` would answer from its cache now, without a review; None when
        it is not cached (expired or never asked)."""
        key = self._key(identity, access)
        if key in self._grants:
            return True
        if key in self._denials:
            return False
        return None

    async def allowed(self, identity: Identity, access: Access, meter: ApiCallMeter) -> bool:
        key = self._key(identity, access)
        while True:
            if key in self._grants:
                ACCESS_DECISIONS.labels("cache_hit").inc()
                return True
            if key in self._denials:
                ACCESS_DECISIONS.labels("cache_hit").inc()
                return False
            pending = self._in_flight.get(key)
            if pending is None:
                return await self._review_shared(key, identity, access, meter)
            ACCESS_DECISIONS.labels("shared").inc()
            try:
                return await asyncio.shield(pending)
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise
                # The asker whose review this was went away (its request or subscription
                # ended): its cancellation is not ours. Ask again, or share the next review.

    async def _review_shared(
        self, key: DecisionKey, identity: Identity, access: Access, meter: ApiCallMeter
    ) -> bool:
        """Review once for everyone asking the same question meanwhile."""
        ACCESS_DECISIONS.labels("reviewed").inc()
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        try:
            decision = await self._review(identity, access, meter)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as error:
            future.set_exception(error)
            # Nobody else may be waiting; retrieve so asyncio does not warn about it.
            future.exception()
            raise
        finally:
            self._in_flight.pop(key, None)
        (self._grants if decision else self._denials)[key] = True
        future.set_result(decision)
        return decision

    async def _review(self, identity: Identity, access: Access, meter: ApiCallMeter) -> bool:
        spec: JsonObject = {"resourceAttributes": access.attributes()}
        if self.self_review:
            kind, path = "SelfSubjectAccessReview", "selfsubjectaccessreviews"
        else:
            kind, path = "SubjectAccessReview", "subjectaccessreviews"
            spec.update({"user": identity.username, "groups": list(identity.groups)})
            if identity.uid:
                spec["uid"] = identity.uid
            if identity.extra:
                spec["extra"] = identity.extra_dict
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": kind, "spec": spec}
        try:
            review = await self.client.request_json(
                "POST", f"/apis/authorization.k8s.io/v1/{path}", meter=meter, body=body
            )
        except ApiStatusError as error:
            raise UnavailableError(f"access review failed ({error.status})") from error
        return bool(dig(review, "status", "allowed"))


# What the service's own identity needs in token-review mode: without these every query fails.
SERVICE_IDENTITY_NEEDS = (
    ("authentication.k8s.io", "tokenreviews", "review callers' tokens"),
    ("authorization.k8s.io", "subjectaccessreviews", "check callers' access"),
)


async def service_identity_problems(client: KubeClient) -> list[str]:
    """Ask the API server (SelfSubjectAccessReview) whether the service's own identity may
    create TokenReviews and SubjectAccessReviews; one sentence per missing permission."""
    problems = []
    for group, resource, purpose in SERVICE_IDENTITY_NEEDS:
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {
                "resourceAttributes": {"verb": "create", "group": group, "resource": resource}
            },
        }
        try:
            review = await client.request_json(
                "POST",
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                meter=ApiCallMeter(budget=1),
                body=body,
            )
        except (ApiStatusError, UnavailableError) as error:
            problems.append(f"could not check whether it may create {resource}: {error}")
            continue
        if not dig(review, "status", "allowed"):
            problems.append(
                f"the service's identity may not create {resource}.{group} (needed to {purpose}); "
                "run it with the chart's ServiceAccount or grant the ClusterRole in docs/service.md"
            )
    return problems
