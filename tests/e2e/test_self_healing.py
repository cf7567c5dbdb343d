"""Under the supervised local stack, SIGKILL each child in turn while a client keeps writing: the stack
heals by itself and no acknowledged write is lost — not in the delta, not in enrichment's projection —
and WebSocket nudges resume. Then the broker drill: the broker SIGKILLed again and again under a steady
writer, with enrichment killed a second later or left running; each restart is a new cluster (every
service restarted after the broker, topics never re-shaped) and nothing acknowledged goes missing.

The stack is this test's own (durable PostgreSQL: the point is that acknowledged writes survive), with
``Stack.supervise()`` doing what ``make run``'s launcher does on its main thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
import uuid
from collections.abc import AsyncIterator, Iterator

import asyncpg
import httpx
import psutil
import pytest
from e2e_support import Device, anonymous, nudge_socket, plain_dsn, wait_for

from common.events import TOPICS
from common.topics import partition_counts
from devstack.broker import AUTO_CREATE_PARTITIONS
from devstack.postgres import scratch_data_dir
from devstack.pytest_plugin import FULL_STACK_TEST_ENV
from devstack.stack import Stack, StackConfig

# Killed in this order; after each, the stack must serve writes again before the next one dies.
VICTIMS = ("bookmarks", "kafka", "enrichment", "auth", "enrichment-worker", "postgres", "gateway")
pytestmark = pytest.mark.timeout(1800)  # a whole stack started and healed many times on a shared machine
DRILL_ROUNDS = 10  # per scenario


@pytest.fixture(scope="module")
def healing_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data_dir = tmp_path_factory.mktemp("healing-stack")
    with scratch_data_dir("devstack-healing-", fallback=data_dir / "postgres") as pg_dir:
        config = StackConfig.for_tests(data_dir, services=True, extra_env=FULL_STACK_TEST_ENV, pg_data_dir=pg_dir)
        config.durable_postgres = True
        stack = Stack(config)
        stack.start()
        try:
            # Children die every few seconds here: a restart that stayed up 5 s waits the first delay again.
            stack.supervise(interval=0.25, healthy_seconds=5.0)
            yield stack
        finally:
            stack.stop()


def _pid(stack: Stack, name: str) -> int:
    if name == "postgres":
        process = stack.postgres.process if stack.postgres else None
    elif name == "kafka":
        process = stack.broker.process if stack.broker else None
    else:
        process = stack.service_processes[name]
    assert process is not None
    return process.pid


class Writer:
    """A client writing bookmarks one after another, retrying each until it is acknowledged (200)."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.acknowledged: list[str] = []
        self.failures = 0
        self.stop = asyncio.Event()

    async def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            bookmark_id = f"w-{n}"
            if await self._put(bookmark_id):
                self.acknowledged.append(bookmark_id)
                n += 1
            await asyncio.sleep(0.05)

    async def _put(self, bookmark_id: str) -> bool:
        body = {"url": f"https://example.com/heal/{bookmark_id}", "title": bookmark_id}
        try:
            response = await self.device.request("PUT", f"/v1/bookmarks/{bookmark_id}", json=body)
        except httpx.HTTPError:
            self.failures += 1
            return False
        if response.status_code != 200:
            # Outages answer 503 (+ Retry-After) or the gateway's 502/504 while it restarts; never 500.
            assert response.status_code in (502, 503, 504), response.text
            self.failures += 1
            return False
        return True


@contextlib.asynccontextmanager
async def _writing(device: Device) -> AsyncIterator[Writer]:
    """A :class:`Writer` writing for the body of the ``async with``, stopped (its last write answered) after."""
    writer = Writer(device)
    task = asyncio.create_task(writer.run())
    try:
        yield writer
    finally:
        writer.stop.set()
        await task


async def _acknowledged_more(writer: Writer, than: int) -> bool:
    return len(writer.acknowledged) > than


async def _projection(stack: Stack, user_id: str) -> set[str]:
    conn = await asyncpg.connect(plain_dsn(stack.dsn("enrichment")))
    try:
        rows = await conn.fetch(
            "SELECT client_bookmark_id FROM bookmark_urls WHERE user_id = $1 AND NOT deleted", uuid.UUID(user_id)
        )
    finally:
        await conn.close()
    return {r["client_bookmark_id"] for r in rows}


async def _consumer_state(stack: Stack) -> str:
    """Enrichment's processed events by topic, its dead letters and its consumer's own metrics (lag per
    partition, outcomes), for a failure message: a consumer without lag figures never got an assignment."""
    conn = await asyncpg.connect(plain_dsn(stack.dsn("enrichment")))
    try:
        processed = await conn.fetch("SELECT topic, count(*) AS n FROM processed_events GROUP BY topic")
        parked = await conn.fetch("SELECT topic, error FROM dead_letters")
    finally:
        await conn.close()
    counts = {r["topic"]: r["n"] for r in processed}
    metrics = "unreadable"
    with contextlib.suppress(httpx.HTTPError):
        async with httpx.AsyncClient(timeout=5.0, trust_env=False) as http:
            text = (await http.get(stack.metrics_url("enrichment"))).text
        metrics = "; ".join(
            line for line in text.splitlines() if line.startswith(("kafka_consumer_lag{", "events_processed_total{"))
        )
    return f"processed {counts}; parked {[tuple(r) for r in parked]}; metrics: {metrics or 'none'}"


async def _outbox_rows(stack: Stack, ids: set[str]) -> str:
    """The bookmarks outbox rows of the missing bookmarks (id, topic, created, published), for a failure
    message: unpublished rows point at the relay, published ones at the broker or the consumer."""
    conn = await asyncpg.connect(plain_dsn(stack.dsn("bookmarks")))
    try:
        rows = await conn.fetch(
            "SELECT id, topic, payload->>'clientBookmarkId' AS bookmark, created_at, published_at FROM outbox "
            "WHERE payload->>'clientBookmarkId' = ANY($1::text[]) ORDER BY id",
            sorted(ids),
        )
    finally:
        await conn.close()
    return "outbox " + "; ".join(
        f"{r['id']} {r['topic']} {r['bookmark']} created {r['created_at']:%H:%M:%S.%f} published {r['published_at']}"
        for r in rows
    )


async def _nudged(stack: Stack, device: Device, bookmark_id: str) -> bool:
    with contextlib.suppress(Exception):
        async with nudge_socket(stack.gateway_url, device.token) as socket:
            await device.put(bookmark_id, {"url": f"https://example.com/heal/{bookmark_id}"})
            return bool(await socket.next(timeout=20) == {"type": "bookmarks_changed"})
    return False


async def _nothing_lost(stack: Stack, device: Device, acknowledged: set[str], kills: list[str]) -> None:
    """Every acknowledged write in a fresh delta and in enrichment's projection, and nudges flowing again;
    a failure names what is missing, what the consumer recorded and the outbox rows, to diagnose."""

    async def delta_has_all() -> bool:
        fresh = await device.fresh_replica()
        return acknowledged <= set(fresh.records)

    await wait_for(delta_has_all, timeout=120, what="every acknowledged write in a fresh delta")
    missing: set[str] = set()

    async def projection_has_all() -> bool:
        missing.clear()
        missing.update(acknowledged - await _projection(stack, device.user_id))
        return not missing

    try:
        await wait_for(projection_has_all, timeout=300, what="enrichment's projection complete")
    except AssertionError as exc:
        state = await _consumer_state(stack)
        raise AssertionError(
            f"{exc}; missing {sorted(missing)}; {state}; {await _outbox_rows(stack, missing)}; kills {kills}"
        ) from exc
    await wait_for(
        lambda: _nudged(stack, device, f"nudge-{uuid.uuid4().hex[:6]}"), timeout=120, what="a nudge for a new write"
    )


async def test_every_child_killed_in_turn_heals_without_losing_acknowledged_writes(healing_stack: Stack) -> None:
    stack = healing_stack
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=30.0, trust_env=False) as http:
        device = await anonymous(http)
        kills: list[str] = []
        async with _writing(device) as writer:
            await wait_for(lambda: _acknowledged_more(writer, 5), what="first writes")
            for victim in VICTIMS:
                old = _pid(stack, victim)
                os.kill(old, signal.SIGKILL)
                kills.append(f"{victim} at {time.strftime('%H:%M:%S')} after {writer.acknowledged[-1]}")
                await wait_for(lambda v=victim, o=old: _restarted(stack, v, o), timeout=300, what=f"{victim} restarted")
                before = len(writer.acknowledged)
                await wait_for(
                    lambda b=before: _acknowledged_more(writer, b + 3),
                    timeout=300,
                    what=f"writes acknowledged again after {victim} was killed",
                )
        await _nothing_lost(stack, device, set(writer.acknowledged), kills)
    assert stack.healer is not None
    assert all(stack.healer.restarts(v) >= 1 for v in VICTIMS)


async def _restarted(stack: Stack, victim: str, old_pid: int) -> bool:
    try:
        return _pid(stack, victim) != old_pid
    except (KeyError, AssertionError):
        return False


async def _services_ready(stack: Stack) -> bool:
    async with httpx.AsyncClient(timeout=2.0, trust_env=False) as http:
        for name in stack.service_processes:
            try:
                if (await http.get(f"{stack.service_url(name)}/readyz")).status_code != 200:
                    return False
            except httpx.HTTPError:
                return False
    return True


def _started_after(stack: Stack, pids: dict[str, int], broker_started: float) -> list[str]:
    """The services not yet running as a process started after the broker's restart."""
    late = []
    for name, process in stack.service_processes.items():
        try:
            fresh = process.pid != pids[name] and psutil.Process(process.pid).create_time() >= broker_started
        except psutil.NoSuchProcess:
            fresh = False
        if not fresh:
            late.append(name)
    return late


async def _broker_round(stack: Stack, writer: Writer, *, kill_enrichment: bool, log: list[str]) -> None:
    pids = {name: process.pid for name, process in stack.service_processes.items()}
    broker = _pid(stack, "kafka")
    os.kill(broker, signal.SIGKILL)
    log.append(f"kafka at {time.strftime('%H:%M:%S')} after {writer.acknowledged[-1]}")
    if kill_enrichment:
        await asyncio.sleep(1.0)  # the scenario itself: a consumer dying while the broker restarts
        with contextlib.suppress(ProcessLookupError):
            os.kill(stack.service_processes["enrichment"].pid, signal.SIGKILL)
        log.append(f"enrichment at {time.strftime('%H:%M:%S')}")
    await wait_for(lambda: _restarted(stack, "kafka", broker), timeout=300, what="broker restarted")
    broker_started = psutil.Process(_pid(stack, "kafka")).create_time()

    async def every_service_restarted() -> list[str] | None:
        return None if _started_after(stack, pids, broker_started) else ["all"]

    try:
        await wait_for(every_service_restarted, timeout=300, what="every service restarted after the broker")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: not restarted {_started_after(stack, pids, broker_started)}") from exc
    await wait_for(lambda: _services_ready(stack), timeout=300, what="every service ready")
    before = len(writer.acknowledged)
    await wait_for(lambda: _acknowledged_more(writer, before + 2), timeout=300, what="writes acknowledged again")
    counts = await partition_counts(stack.kafka_bootstrap)
    assert {t: counts.get(t) for t in TOPICS} == dict.fromkeys(TOPICS, AUTO_CREATE_PARTITIONS), counts


async def test_broker_restart_drill_loses_no_acknowledged_write(healing_stack: Stack) -> None:
    stack = healing_stack
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=30.0, trust_env=False) as http:
        device = await anonymous(http)
        kills: list[str] = []
        async with _writing(device) as writer:
            await wait_for(lambda: _acknowledged_more(writer, 3), what="first writes")
            for kill_enrichment in (True, False):
                for _ in range(DRILL_ROUNDS):
                    await _broker_round(stack, writer, kill_enrichment=kill_enrichment, log=kills)
        await _nothing_lost(stack, device, set(writer.acknowledged), kills)
