"""JSON requests to the API server through the one shared ApiClient, optionally as a caller.

Every request passes an `ApiCallMeter`: it enforces the per-request API-call budget and the
deadline, and records the call, which is what tests (and the `apiCalls` response extension)
count. Process-wide observers see every call too, so tests can instrument the transport.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import aiohttp

from kueue_graphql.core.errors import (
    BadRequestError,
    ForbiddenError,
    NotFoundError,
    ServiceError,
    UnavailableError,
)
from kueue_graphql.core.identity import Identity
from kueue_graphql.kube.resources import Resource
from kueue_graphql.kube.transport import (
    IMPERSONATE_PREFIX,
    RawResponse,
    RepeatedHeaderRESTClient,
    header_lines,
)
from kueue_graphql.observe.metrics import (
    API_CALL_SECONDS,
    API_CALLS,
    API_RESPONSE_BYTES,
    api_resource,
    api_verb,
)

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
Query = Sequence[tuple[str, str]]


@dataclass(frozen=True)
class ApiCall:
    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    # The identity a call was made as (None: the service's own identity).
    as_user: str | None

    def describe(self) -> str:
        query = "&".join(f"{k}={v}" for k, v in self.query)
        return f"{self.method} {self.path}{'?' + query if query else ''}"


@dataclass
class ApiCallMeter:
    """Per-request accounting: how many API calls, until when, and which."""

    budget: int
    deadline: float | None = None  # time.monotonic() value
    calls: list[ApiCall] = field(default_factory=list)

    def admit(self, call: ApiCall) -> float | None:
        """Record a call about to be made; returns the seconds left before the deadline."""
        if len(self.calls) >= self.budget:
            raise BadRequestError(
                f"query needs more than {self.budget} Kubernetes API calls; select fewer fields "
                "or smaller pages"
            )
        remaining = None
        if self.deadline is not None:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise UnavailableError("request deadline exceeded")
        self.calls.append(call)
        return remaining


class ApiStatusError(ServiceError):
    """A non-success answer from the API server that callers map to their own error."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def impersonation_headers(identity: Identity) -> dict[str, str | list[str]]:
    headers: dict[str, str | list[str]] = {"Impersonate-User": identity.username}
    if identity.service_account is not None:
        # A ServiceAccount is impersonated by its name alone: the API server adds its fixed
        # groups itself, and constrained impersonation (`impersonate:serviceaccount`, KEP-5284)
        # refuses a ServiceAccount with a uid, groups or extras. Its extras (bound-token pod and
        # node names) do not enter an RBAC decision.
        return headers
    if identity.uid:
        headers["Impersonate-Uid"] = identity.uid
    groups = [group for group in identity.groups if group]
    if groups:
        # A list: the REST layer sends one Impersonate-Group line per group.
        headers["Impersonate-Group"] = groups
    for key, values in identity.extra:
        # Extra keys travel in a header name, so Kubernetes requires them percent-encoded.
        headers[f"Impersonate-Extra-{quote(key, safe='')}"] = list(values)
    return headers


class KubeClient:
    """The process-wide Kubernetes client."""

    def __init__(self, api_client: Any, request_timeout: float = 10.0) -> None:
        self.api_client = api_client
        self.request_timeout = request_timeout
        self.observers: list[Callable[[ApiCall], None]] = []

    async def request_json(
        self,
        method: str,
        path: str,
        *,
        meter: ApiCallMeter,
        query: Query = (),
        body: JsonObject | None = None,
        as_identity: Identity | None = None,
    ) -> JsonObject:
        """Send one request; ApiStatusError for non-2xx, UnavailableError when unreachable.

        A 429 (API Priority and Fairness, or max-in-flight) is retried after its Retry-After,
        a few times, while the request's deadline allows; each attempt counts as an API call."""
        for attempt in range(MAX_THROTTLED_RETRIES + 1):
            try:
                return await self._send(method, path, meter, query, body, as_identity)
            except ThrottledError as throttled:
                left = None if meter.deadline is None else meter.deadline - time.monotonic()
                if attempt == MAX_THROTTLED_RETRIES or (
                    left is not None and throttled.retry_after >= left
                ):
                    raise UnavailableError(
                        "the Kubernetes API server is throttling requests (429, retry after "
                        f"{throttled.retry_after:g} s)"
                    ) from throttled
                await asyncio.sleep(throttled.retry_after)
        raise AssertionError("unreachable")

    async def _send(
        self,
        method: str,
        path: str,
        meter: ApiCallMeter,
        query: Query,
        body: JsonObject | None,
        as_identity: Identity | None,
    ) -> JsonObject:
        call = ApiCall(method, path, tuple(query), as_identity.username if as_identity else None)
        remaining = meter.admit(call)
        for observer in self.observers:
            observer(call)
        timeout = (
            self.request_timeout if remaining is None else min(remaining, self.request_timeout)
        )
        headers: dict[str, str | list[str]] = {"Accept": "application/json"}
        if as_identity is not None:
            headers.update(impersonation_headers(as_identity))
        verb, resource = api_verb(method, path), api_resource(path)
        started = time.monotonic()
        try:
            # In a Task of its own: aiohttp's timeout cancels the Task it was entered in, and a
            # resolver's first step runs in the request's Task (graph/resolving.py), so a slow API
            # call must time out as this call, not cancel the whole request. Its context is
            # empty: what the exchange makes (a pooled connection's read handler, the pool's
            # keep-alive timer) outlives the request and would otherwise keep the request's
            # context, and all its ContextVars hold, alive with it.
            response = await asyncio.get_running_loop().create_task(
                self._exchange(method, path, query, headers, body, timeout),
                context=contextvars.Context(),
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            _api_calls(verb, resource, "error").inc()
            log.warning(
                "API server %s unreachable for %s %s: %s",
                self.api_client.configuration.host,
                method,
                path,
                type(error).__name__,
            )
            raise UnavailableError(
                "the Kubernetes API server is unreachable or too slow"
            ) from error
        status, payload = response.status, response.payload
        _api_calls(verb, resource, str(status)).inc()
        bytes_counter, seconds_histogram = _api_call_series(verb, resource)
        bytes_counter.inc(len(payload))
        seconds_histogram.observe(time.monotonic() - started)
        if 200 <= status < 300:
            try:
                decoded = json.loads(payload)
            except ValueError:
                decoded = None
            if not isinstance(decoded, dict):
                raise UnavailableError("the Kubernetes API server sent an unexpected answer")
            return decoded
        if status == 429:
            raise ThrottledError(_retry_after(response.retry_after, payload))
        raise ApiStatusError(status, _status_message(payload))

    async def _exchange(
        self,
        method: str,
        path: str,
        query: Query,
        headers: dict[str, str | list[str]],
        body: JsonObject | None,
        total_seconds: float,
    ) -> RawResponse:
        """The request on the wire: credentials from the configuration (refreshed by its hook),
        then the call's headers, then the client's defaults (User-Agent), as call_api orders
        them. A default Impersonate-* header would make every caller one user: refused."""
        api_client = self.api_client
        rest_client = api_client.rest_client
        if not isinstance(rest_client, RepeatedHeaderRESTClient):
            raise TypeError("KubeClient needs install_repeated_header_rest_client(api_client)")
        for name in api_client.default_headers:
            if name.lower().startswith(IMPERSONATE_PREFIX):
                raise RuntimeError("shared ApiClient carries an Impersonate-* default header")
        lines = header_lines({**headers, **api_client.default_headers})
        if body is not None:
            lines["Content-Type"] = "application/json"
        for setting in (await api_client.configuration.auth_settings()).values():
            lines[setting["key"]] = setting["value"]
        return await rest_client.exchange(
            method,
            api_client.configuration.host + path,
            query=query,
            headers=lines,
            body=None if body is None else json.dumps(body).encode(),
            total_seconds=total_seconds,
        )


# prometheus_client's labels() resolves the child series on every call; these are bound once.
@functools.cache
def _api_calls(verb: str, resource: str, status: str) -> Any:
    return API_CALLS.labels(verb, resource, status)


@functools.cache
def _api_call_series(verb: str, resource: str) -> tuple[Any, Any]:
    return API_RESPONSE_BYTES.labels(verb, resource), API_CALL_SECONDS.labels(verb, resource)


MAX_THROTTLED_RETRIES = 3
MAX_RETRY_AFTER_SECONDS = 10.0


class ThrottledError(Exception):
    def __init__(self, retry_after: float) -> None:
        super().__init__(f"throttled, retry after {retry_after} s")
        self.retry_after = retry_after


def _retry_after(header: str | None, payload: bytes) -> float:
    """Seconds to wait: the Retry-After header, else the Status's details.retryAfterSeconds."""
    seconds: float | None = None
    if header and header.strip().isdigit():
        seconds = float(header.strip())
    else:
        try:
            details = json.loads(payload).get("details") or {}
            value = details.get("retryAfterSeconds")
            seconds = float(value) if isinstance(value, int | float) else None
        except (ValueError, AttributeError):
            seconds = None
    return min(max(seconds if seconds is not None else 1.0, 0.0), MAX_RETRY_AFTER_SECONDS)


def _status_message(payload: bytes) -> str:
    try:
        status = json.loads(payload)
    except ValueError:
        return payload[:200].decode("utf-8", "replace")
    if isinstance(status, dict):
        return str(status.get("message", ""))
    return ""


def raise_for_read(
    error: ApiStatusError, resource: str, name: str | None, namespace: str | None
) -> ServiceError:
    """Translate an API status into the error a caller of a read should see."""
    if error.status == 404 and name is not None:
        return NotFoundError(resource, name, namespace)
    if error.status in (400, 422):
        return BadRequestError(error.message)
    if error.status == 401:
        return UnavailableError("the service's own credentials were rejected by the API server")
    return UnavailableError(f"the Kubernetes API server answered {error.status}")


def read_error(
    error: ApiStatusError,
    verb: str,
    resource: Resource,
    namespace: str | None = None,
    name: str | None = None,
) -> ServiceError:
    """A read's API status as its caller sees it: 403 FORBIDDEN naming the verb, resource and
    scope that were refused; any other status as `raise_for_read` says."""
    if error.status == 403:
        return ForbiddenError(
            verb, resource.group, resource.plural, namespace, name, namespaced=resource.namespaced
        )
    return raise_for_read(error, resource.kind, name, namespace)
