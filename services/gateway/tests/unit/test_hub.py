"""Nudge routing and coalescing of the real Hub and Connection over an in-memory socket."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest

from common.auth import Principal
from gateway.realtime import CLOSE_UNAUTHORIZED, NUDGE, Connection, Hub


class MemorySocket:
    """The part of Starlette's WebSocket that Connection uses; records what was sent."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.closed: tuple[int, str] | None = None
        self.gate: asyncio.Event | None = None  # when set to an Event, sends wait for it
        self.sending = asyncio.Event()
        self._gone = asyncio.Event()

    async def send_text(self, text: str) -> None:
        self.sending.set()
        if self.gate is not None:
            await self.gate.wait()
        self.sent.append(text)

    async def receive(self) -> dict[str, Any]:
        await self._gone.wait()
        return {"type": "websocket.disconnect"}

    async def close(self, code: int = 1000, reason: str = "") -> None:
        self.closed = (code, reason)
        self._gone.set()

    def disconnect(self) -> None:
        self._gone.set()


def principal(user: uuid.UUID, expires_in: float = 600) -> Principal:
    return Principal(user_id=user, token_id="t", expires_at=int(time.time() + expires_in))


async def until(predicate: Any, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.005)


class Harness:
    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.tasks: list[asyncio.Task[None]] = []

    def connect(self, user: uuid.UUID, expires_in: float = 600) -> tuple[MemorySocket, Connection]:
        socket = MemorySocket()
        connection = Connection(socket, principal(user, expires_in))  # type: ignore[arg-type]
        assert self.hub.register(connection)
        self.tasks.append(asyncio.create_task(connection.run()))
        return socket, connection

    async def stop(self) -> None:
        self.hub.close_all()
        await asyncio.gather(*self.tasks)


@pytest.fixture
async def harness() -> Any:
    h = Harness(Hub(max_per_user=3, coalesce_seconds=0.01))
    yield h
    await h.stop()


async def test_a_change_nudges_every_socket_of_its_user_and_no_other(harness: Harness) -> None:
    user, other = uuid.uuid4(), uuid.uuid4()
    a, _ = harness.connect(user)
    b, _ = harness.connect(user)
    c, _ = harness.connect(other)
    harness.hub.notify(user, time.time())
    await until(lambda: len(a.sent) == 1 and len(b.sent) == 1 and harness.hub.idle(user))
    assert a.sent == [NUDGE]
    assert c.sent == []
    assert harness.hub.idle(other)


async def test_a_burst_is_coalesced_and_a_change_during_a_send_is_sent_again(harness: Harness) -> None:
    user = uuid.uuid4()
    socket, _ = harness.connect(user)
    socket.gate = asyncio.Event()
    for _ in range(50):
        harness.hub.notify(user, time.time())
    await asyncio.wait_for(socket.sending.wait(), 10)  # first nudge is in flight, held at the gate
    harness.hub.notify(user, time.time())  # a change after that send started
    await until(lambda: not harness.hub.idle(user) and user not in harness.hub._timers)
    socket.gate.set()
    await until(lambda: harness.hub.idle(user))
    assert 2 <= len(socket.sent) <= 51
    assert socket.sent[-1] == NUDGE


async def test_an_isolated_change_is_nudged_at_once_and_changes_within_the_window_once_at_its_end() -> None:
    harness = Harness(Hub(max_per_user=3, coalesce_seconds=0.3))
    user = uuid.uuid4()
    socket, _ = harness.connect(user)
    try:
        harness.hub.notify(user, time.time())
        await until(lambda: len(socket.sent) == 1, timeout=0.15)  # not after the 0.3 s window
        harness.hub.notify(user, time.time())
        harness.hub.notify(user, time.time())
        await asyncio.sleep(0.1)
        assert len(socket.sent) == 1  # within the window: held
        await until(lambda: len(socket.sent) == 2, timeout=1.0)  # one nudge for both, when it ends
        await until(lambda: user not in harness.hub._timers, timeout=1.0)  # a quiet window closes
        harness.hub.notify(user, time.time())
        await until(lambda: len(socket.sent) == 3, timeout=0.15)  # the next change is at once again
    finally:
        await harness.stop()


async def test_users_without_sockets_cost_nothing(harness: Harness) -> None:
    user = uuid.uuid4()
    harness.hub.notify(user, time.time())
    assert harness.hub.idle(user)


async def test_cap_per_user() -> None:
    hub = Hub(max_per_user=2, coalesce_seconds=0.01)
    user = uuid.uuid4()
    connections = [Connection(MemorySocket(), principal(user)) for _ in range(3)]  # type: ignore[arg-type]
    assert hub.register(connections[0]) and hub.register(connections[1])
    assert not hub.register(connections[2])
    hub.unregister(connections[0])
    assert hub.register(connections[2])
    assert hub.connections(user) == 2


async def test_close_user_and_token_expiry_close_with_4401(harness: Harness) -> None:
    user, short = uuid.uuid4(), uuid.uuid4()
    socket, _ = harness.connect(user)
    expiring, _ = harness.connect(short, expires_in=0.05)
    assert harness.hub.close_user(user, CLOSE_UNAUTHORIZED, "account deleted") == 1
    await until(lambda: socket.closed is not None and expiring.closed is not None)
    assert socket.closed == (4401, "account deleted")
    assert expiring.closed == (4401, "token expired")


async def test_a_disconnected_client_ends_its_connection(harness: Harness) -> None:
    socket, _ = harness.connect(uuid.uuid4())
    task = harness.tasks[-1]
    socket.disconnect()
    await asyncio.wait_for(task, 10)
    assert socket.closed is None
