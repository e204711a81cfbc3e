"""Authentication.

Token-review mode (the default): the caller's bearer token goes to the API server's TokenReview
and the service then acts as exactly the identity that comes back. The decision is cached for
a few seconds under a SHA-256 of the token, never the token itself, and tokens never reach a
log line or a response.

With audiences (`--token-audience`), TokenReview is asked to accept only tokens minted for one of
them, and its answer must name one: the API server refuses its own static and default-audience
tokens then, and a token minted for kueue-graphql alone is no use to anyone at the API server.

Local mode (development): every caller is the kubeconfig's own identity. It is only safe on a
loopback address, which the command line enforces.
"""

from __future__ import annotations

import hashlib
import logging
import re
from typing import Protocol

from cachetools import TTLCache

from kueue_graphql.core.errors import UnauthenticatedError, UnavailableError
from kueue_graphql.core.identity import Identity
from kueue_graphql.kube.client import ApiCallMeter, ApiStatusError, KubeClient
from kueue_graphql.observe.metrics import TOKEN_REVIEWS

log = logging.getLogger(__name__)


# RFC 6750 section 2.1: credentials = "Bearer" 1*SP b64token, and nothing after it. The API
# server reads only the first word after "Bearer", so `Bearer <token> <junk>` would be that
# token's user while every junk variant cost a TokenReview of its own.
_BEARER = re.compile(r"[Bb][Ee][Aa][Rr][Ee][Rr] +([A-Za-z0-9\-._~+/]+=*)")


def bearer_token(authorization: str | None) -> str | None:
    """The token of `Authorization: Bearer <token>`; None for a missing or any other header."""
    if not authorization:
        return None
    match = _BEARER.fullmatch(authorization)
    return match.group(1) if match else None


def audience_confirmed(wanted: tuple[str, ...], status: dict[str, object]) -> bool:
    """Whether a TokenReview's status names one of the audiences asked for (any answer does
    when none was). An authenticator that ignores spec.audiences answers without them: its
    acceptance says nothing about the audience, so it is not taken."""
    if not wanted:
        return True
    returned = status.get("audiences")
    return isinstance(returned, list) and any(audience in wanted for audience in returned)


class Authenticator(Protocol):
    # Whether reads must impersonate the caller (False: read as the service's own identity).
    impersonates: bool

    def requires_token(self) -> bool: ...

    async def authenticate(self, token: str | None, meter: ApiCallMeter) -> Identity: ...


class TokenReviewAuthenticator:
    impersonates = True

    def __init__(
        self,
        client: KubeClient,
        *,
        ttl_seconds: float = 30.0,
        audiences: tuple[str, ...] = (),
        size: int = 10000,
    ) -> None:
        self.client = client
        self.audiences = audiences
        self._rejection = "the bearer token was not accepted by the Kubernetes API server"
        if audiences:
            self._rejection += f" for the audience {' or '.join(audiences)}"
        self._cache: TTLCache[str, Identity] = TTLCache(maxsize=size, ttl=ttl_seconds)

    def requires_token(self) -> bool:
        return True

    async def authenticate(self, token: str | None, meter: ApiCallMeter) -> Identity:
        if not token:
            raise UnauthenticatedError("send `Authorization: Bearer <token>`")
        digest = hashlib.sha256(token.encode()).hexdigest()
        cached = self._cache.get(digest)
        if cached is not None:
            TOKEN_REVIEWS.labels("cache_hit").inc()
            return cached
        spec: dict[str, object] = {"token": token}
        if self.audiences:
            spec["audiences"] = list(self.audiences)
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        try:
            review = await self.client.request_json(
                "POST", "/apis/authentication.k8s.io/v1/tokenreviews", meter=meter, body=body
            )
        except ApiStatusError as error:
            raise UnavailableError(f"token review failed ({error.status})") from error
        status = review.get("status") or {}
        if not status.get("authenticated"):
            TOKEN_REVIEWS.labels("rejected").inc()
            raise UnauthenticatedError(self._rejection)
        if not audience_confirmed(self.audiences, status):
            TOKEN_REVIEWS.labels("rejected").inc()
            raise UnauthenticatedError(self._rejection)
        try:
            identity = Identity.from_user_info(status.get("user") or {})
        except ValueError as error:
            raise UnauthenticatedError("the token review returned no usable identity") from error
        TOKEN_REVIEWS.labels("accepted").inc()
        self._cache[digest] = identity
        return identity


class LocalAuthenticator:
    """Everyone is the kubeconfig's identity; found once through SelfSubjectReview."""

    impersonates = False

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self._identity: Identity | None = None

    def requires_token(self) -> bool:
        return False

    async def authenticate(self, token: str | None, meter: ApiCallMeter) -> Identity:
        if self._identity is None:
            body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
            try:
                review = await self.client.request_json(
                    "POST",
                    "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                    meter=meter,
                    body=body,
                )
                user = (review.get("status") or {}).get("userInfo") or {}
                self._identity = Identity.from_user_info(user)
            except (ApiStatusError, ValueError) as error:
                raise UnavailableError(
                    "could not find out the kubeconfig's own identity"
                ) from error
            log.warning(
                "local auth mode: every request reads as the kubeconfig identity %r",
                self._identity.username,
            )
        return self._identity
