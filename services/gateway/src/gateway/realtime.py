"""Real-time ``bookmarks_changed`` nudges over WebSocket (docs/api-guide.md, section 8).

Every replica consumes every bookmark event (see ``gateway.events``) and nudges the sockets it holds,
so a client may be connected to any replica. A burst of events for one user is coalesced into one
nudge per ``coalesce_seconds`` window; a nudge is never lost: each socket keeps a "changed since the
last send" mark, so an event that arrives while a send is in flight is followed by another send.

Close codes: 4401 bad, expired or denied token (also when the token expires while connected);
4429 too many connections for the user (or connect rate limit); 1001 gateway shutting down.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Callable

from starlette.websockets import WebSocket

from common.auth import Principal, bearer_token
from common.context import user_id_var
from common.errors import Unauthorized
from common.tasks import wait_for_event
from gateway.edge import EdgeAuth
from gateway.metrics import NUDGE_LATENCY, NUDGES_SENT, RATE_LIMITED, WS_CONNECTIONS, WS_REJECTED
from gateway.ratelimit import TokenBucketLimiter

log = logging.getLogger("gateway.realtime")

NUDGE = json.dumps({"type": "bookmarks_changed"})
CLOSE_UNAUTHORIZED = 4401
CLOSE_TOO_MANY = 4429
CLOSE_GOING_AWAY = 1001


class Connection:
    """One accepted socket: sends nudges, closes itself when its token expires or when told to."""

    def __init__(self, websocket: WebSocket, principal: Principal, *, clock: Callable[[], float] = time.time) -> None:
        self.websocket = websocket
        self.user_id = principal.user_id
        self.expires_at = float(principal.expires_at)
        self._clock = clock
        self._wake = asyncio.Event()
        self._pending_since: float | None = None  # occurredAt of the oldest change not yet sent
        self._close_with: tuple[int, str] | None = None
        self._disconnected = False
        self._sending = False

    @property
    def idle(self) -> bool:
        """Nothing waiting to be sent and no send in progress."""
        return self._pending_since is None and not self._sending

    def nudge(self, occurred_at: float) -> None:
        if self._pending_since is None or occurred_at < self._pending_since:
            self._pending_since = occurred_at
        self._wake.set()

    def close(self, code: int, reason: str) -> None:
        if self._close_with is None:
            self._close_with = (code, reason)
        self._wake.set()

    async def run(self) -> None:
        reader = asyncio.create_task(self._read(), name=f"ws-read-{self.user_id}")
        try:
            await self._write()
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    async def _read(self) -> None:
        # Clients have nothing to say; reading is how a disconnect is noticed (and pongs are handled
        # by the server's protocol layer).
        try:
            while (await self.websocket.receive())["type"] != "websocket.disconnect":
                pass
        except Exception:  # noqa: S110 - any receive failure means the peer is gone
            pass
        finally:
            self._disconnected = True
            self._wake.set()

    async def _write(self) -> None:
        while True:
            # Cleared before the checks, with no await in between, so a wake-up during the wait is never missed.
            self._wake.clear()
            if self._disconnected:
                return
            if self._close_with is not None:
                await self._close(*self._close_with)
                return
            remaining = self.expires_at - self._clock()
            if remaining <= 0:
                await self._close(CLOSE_UNAUTHORIZED, "token expired")
                return
            if self._pending_since is not None:
                since, self._pending_since = self._pending_since, None
                self._sending = True
                try:
                    await self.websocket.send_text(NUDGE)
                except Exception:  # the peer went away mid-send; the reader notices too
                    return
                finally:
                    self._sending = False
                NUDGES_SENT.inc()
                NUDGE_LATENCY.observe(max(0.0, self._clock() - since))
                continue
            await wait_for_event(self._wake, remaining)

    async def _close(self, code: int, reason: str) -> None:
        with contextlib.suppress(Exception):  # already closed by the peer: nothing left to tell it
            await self.websocket.close(code=code, reason=reason)


class Hub:
    """The sockets of this replica by user, and per-user coalescing of nudges."""

    def __init__(self, *, max_per_user: int, coalesce_seconds: float) -> None:
        self.max_per_user = max_per_user
        self.coalesce_seconds = coalesce_seconds
        self._sockets: dict[uuid.UUID, set[Connection]] = {}
        self._pending: dict[uuid.UUID, float] = {}
        self._timers: dict[uuid.UUID, asyncio.TimerHandle] = {}
        # Called when this replica goes from no socket to one (the event tail starts polling fast).
        self.on_first_socket: Callable[[], None] | None = None

    def register(self, connection: Connection) -> bool:
        """Add ``connection`` unless its user is at the cap (synchronous: no await can interleave)."""
        first = not self._sockets
        sockets = self._sockets.setdefault(connection.user_id, set())
        if len(sockets) >= self.max_per_user:
            if not sockets:
                del self._sockets[connection.user_id]
            return False
        sockets.add(connection)
        WS_CONNECTIONS.inc()
        if first and self.on_first_socket is not None:
            self.on_first_socket()
        return True

    def unregister(self, connection: Connection) -> None:
        sockets = self._sockets.get(connection.user_id)
        if sockets is None or connection not in sockets:
            return
        sockets.discard(connection)
        WS_CONNECTIONS.dec()
        if not sockets:
            del self._sockets[connection.user_id]

    def has_sockets(self) -> bool:
        """Whether this replica holds any socket (a nudge could reach someone)."""
        return bool(self._sockets)

    def listening(self, user_id: uuid.UUID) -> bool:
        """Whether ``user_id`` holds a socket on this replica (a nudge for them could reach someone)."""
        return user_id in self._sockets

    def connections(self, user_id: uuid.UUID) -> int:
        return len(self._sockets.get(user_id, ()))

    def __len__(self) -> int:
        return sum(len(s) for s in self._sockets.values())

    def idle(self, user_id: uuid.UUID) -> bool:
        """No nudge for ``user_id`` is scheduled, waiting or being sent on this replica."""
        if user_id in self._timers or user_id in self._pending:
            return False
        return all(connection.idle for connection in self._sockets.get(user_id, ()))

    def notify(self, user_id: uuid.UUID, occurred_at: float) -> None:
        """The user's delta stream changed at ``occurred_at`` (epoch seconds): nudge their sockets.

        The first change nudges at once and opens a coalescing window; changes within the window are sent
        as one nudge when it ends, which opens the next window. So an isolated write costs no waiting
        (a trailing window alone would double the nudge latency) and a burst at most one nudge per
        window, never dropping the last change.
        """
        if user_id not in self._sockets:
            return  # nobody to tell on this replica; a later connect starts with a delta sync anyway
        if user_id in self._timers:
            previous = self._pending.get(user_id)
            self._pending[user_id] = occurred_at if previous is None else min(previous, occurred_at)
            return
        self._send(user_id, occurred_at)

    def _send(self, user_id: uuid.UUID, occurred_at: float) -> None:
        for connection in self._sockets.get(user_id, ()):
            connection.nudge(occurred_at)
        self._timers[user_id] = asyncio.get_running_loop().call_later(self.coalesce_seconds, self._flush, user_id)

    def _flush(self, user_id: uuid.UUID) -> None:
        self._timers.pop(user_id, None)
        occurred_at = self._pending.pop(user_id, None)
        if occurred_at is not None:
            self._send(user_id, occurred_at)

    def close_user(self, user_id: uuid.UUID, code: int, reason: str) -> int:
        sockets = list(self._sockets.get(user_id, ()))
        for connection in sockets:
            connection.close(code, reason)
        return len(sockets)

    def close_all(self, code: int = CLOSE_GOING_AWAY, reason: str = "server shutting down") -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._pending.clear()
        for sockets in list(self._sockets.values()):
            for connection in sockets:
                connection.close(code, reason)


def _token(websocket: WebSocket) -> str:
    header = websocket.headers.get("authorization")
    if header is not None:
        return bearer_token(header)
    token = websocket.query_params.get("access_token", "").strip()
    if not token:
        raise Unauthorized("An access token is required (Authorization header or access_token parameter).")
    return token


async def _refuse(websocket: WebSocket, code: int, reason: str, metric_reason: str) -> None:
    # Accept first: a close frame is the only way to hand the client an application close code; a
    # handshake refusal would reach it as a bare HTTP 403.
    WS_REJECTED.labels(metric_reason).inc()
    with contextlib.suppress(Exception):
        await websocket.accept()
        await websocket.close(code=code, reason=reason)


async def serve_events(websocket: WebSocket, *, auth: EdgeAuth, hub: Hub, limiter: TokenBucketLimiter | None) -> None:
    """The ``GET /v1/events`` session: authenticate, register, then nudge until closed."""
    try:
        principal = await auth.authenticate(_token(websocket))
    except Unauthorized:
        await _refuse(websocket, CLOSE_UNAUTHORIZED, "unauthorized", "unauthorized")
        return
    user_id = str(principal.user_id)
    websocket.state.user_id = user_id
    user_id_var.set(user_id)
    if limiter is not None and not limiter.take(user_id).allowed:
        RATE_LIMITED.labels("user").inc()
        await _refuse(websocket, CLOSE_TOO_MANY, "rate limited", "rate-limited")
        return
    connection = Connection(websocket, principal)
    if not hub.register(connection):
        await _refuse(websocket, CLOSE_TOO_MANY, "too many connections", "too-many-connections")
        return
    try:
        await websocket.accept()
        await connection.run()
    finally:
        hub.unregister(connection)
