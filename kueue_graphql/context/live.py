"""Limits and bookkeeping for subscriptions: caps per connection, per identity and in total."""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass

from kueue_graphql.core.errors import BadRequestError
from kueue_graphql.core.identity import Identity
from kueue_graphql.kube.authz import Access, Authorizer
from kueue_graphql.observe.metrics import SUBSCRIPTIONS_OPEN


@dataclass(frozen=True)
class LiveLimits:
    per_connection: int = 20
    per_identity: int = 100
    total: int = 1000
    # A burst of watch events within this window yields one recompute (and at most one push).
    coalesce_seconds: float = 0.25
    # Identity (TokenReview) and access (SubjectAccessReview) are re-checked at least this often
    # even when nothing changes; a revoked token or RoleBinding ends the stream within it.
    recheck_seconds: float = 30.0
    # Messages computed but not yet sent, per subscription. A subscriber that stops reading
    # fills it (the socket's buffers first); one more message ends the stream with
    # SLOW_CONSUMER instead of buffering without limit.
    send_queue: int = 16
    # A WebSocket whose sends have waited this long (the client is not reading; the socket's
    # buffers are full) is closed with SLOW_CONSUMER (http/ws_protocol.py), well before
    # uvicorn's keep-alive (a 20 s ping, 20 s for its pong) would cut it as an abnormal close.
    send_timeout_seconds: float = 10.0
    # Recomputes woken for a queue position only that run at once (counting those whose own
    # inputs changed, which never wait); the others wait their turn.
    recomputes_at_once: int = 8


class RecomputeTurns:
    """Recomputes woken for a queue position only take turns, at most `limit` running at once
    (counting the urgent ones), in the order they came; an urgent recompute (a stream whose own
    inputs changed, or a re-check's) never waits. A change that moves a thousand positions then
    does not put the answer of the Workload that changed behind a thousand recomputes, nor
    behind a few that wait on a slow API read."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.running = 0
        self._waiting: deque[asyncio.Future[None]] = deque()

    def waiting(self) -> int:
        return len(self._waiting)

    @asynccontextmanager
    async def turn(self, urgent: bool) -> AsyncIterator[None]:
        if urgent or (self.running < self.limit and not self._waiting):
            self.running += 1
        else:
            granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.append(granted)
            try:
                await granted
            except asyncio.CancelledError:
                if granted.done() and not granted.cancelled():
                    self._release()  # handed a turn it will not take: pass it on
                elif granted in self._waiting:  # not yet passed over by a release
                    self._waiting.remove(granted)
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        self.running -= 1
        while self._waiting and self.running < self.limit:
            waiter = self._waiting.popleft()
            if waiter.done():  # cancelled with its task, which is leaving
                continue
            self.running += 1
            waiter.set_result(None)


class LiveRegistry:
    """Process-wide counts of open subscriptions. `slot` refuses (BAD_REQUEST, before any API
    call of the subscription) when a cap is reached, and frees the slot when the stream ends."""

    def __init__(
        self,
        limits: LiveLimits,
        on_closed: Callable[[], None] | None = None,
        authorizer: Authorizer | None = None,
    ) -> None:
        self.limits = limits
        # Whose cached access decisions a quiet subscription's re-check reads first.
        self.authorizer = authorizer
        self.turns = RecomputeTurns(limits.recomputes_at_once)
        # Called after each slot is freed (http.memory.FreeMemoryReturner.closed).
        self.on_closed = on_closed
        self.total = 0
        self.by_identity: Counter[str] = Counter()
        self.by_connection: Counter[int] = Counter()

    def decisions_hold(self, identity: Identity, decisions: Mapping[Access, bool]) -> bool | None:
        """Whether each access decision is still what it was, from the authorizer's cache (the
        answer any read would get now, shared by every subscription of the identity): False
        when one differs, None when one is not cached (it must be asked: a review)."""
        if self.authorizer is None:
            return None
        missing = False
        for access, decided in decisions.items():
            now = self.authorizer.cached(identity, access)
            if now is None:
                missing = True
            elif now != decided:
                return False
        return None if missing else True

    @contextmanager
    def slot(self, connection: int, identity: str) -> Iterator[None]:
        limits = self.limits
        if self.by_connection[connection] >= limits.per_connection:
            raise BadRequestError(
                f"at most {limits.per_connection} subscriptions per connection; end one first"
            )
        if self.by_identity[identity] >= limits.per_identity:
            raise BadRequestError(f"at most {limits.per_identity} subscriptions per identity")
        if self.total >= limits.total:
            raise BadRequestError(f"the server holds its maximum of {limits.total} subscriptions")
        self.total += 1
        self.by_identity[identity] += 1
        self.by_connection[connection] += 1
        SUBSCRIPTIONS_OPEN.inc()
        try:
            yield
        finally:
            SUBSCRIPTIONS_OPEN.dec()
            self.total -= 1
            self.by_identity[identity] -= 1
            self.by_connection[connection] -= 1
            if not self.by_identity[identity]:
                del self.by_identity[identity]
            if not self.by_connection[connection]:
                del self.by_connection[connection]
            if self.on_closed is not None:
                self.on_closed()
