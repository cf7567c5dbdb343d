"""A dependency that stops answering without closing anything (SIGSTOP), under steady load through the
gateway: the platform fails fast, says so in readiness, and recovers by itself (docs/operations/
database-hangs.md).

* PostgreSQL (the postmaster and every backend) stopped for ``HANG_SECONDS``: every request that needs it
  answers ``200`` or ``503 unavailable`` with ``Retry-After`` well before the gateway's upstream deadline
  (never ``504``), requests that need no database keep answering ``200``, the services' ``/readyz``
  turns ``503`` and back to ``200`` on its own, ``/healthz`` never fails; afterwards every acknowledged
  write is there, the outbox drains, nudges flow, nothing is dead-lettered and no process restarted.
* The broker stopped: writes keep succeeding into the outbox, readiness stays ``200``, and the events of
  the writes made meanwhile reach enrichment's projection and the nudge socket after ``SIGCONT``.

The bounds asserted are the contract's (each answer well under the gateway's 10 s deadline), derived
from the configured database deadlines with generous room for a loaded machine; the measured
distribution is printed (``pytest -s``) for docs/operations/database-hangs.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import httpx
import psutil
import pytest
from e2e_support import Device, anonymous, nudge_socket, plain_dsn, wait_for

from devstack.postgres import scratch_data_dir
from devstack.pytest_plugin import FULL_STACK_TEST_ENV
from devstack.stack import Stack, StackConfig

pytestmark = pytest.mark.timeout(1200)

HANG_SECONDS = 20.0
# The contract's bound for one answer while a dependency hangs: the deadlines' sum is 2.75 s (connect or
# statement deadline after the acquire deadline); the rest is room for a shared 2-core machine.
ANSWER_BOUND_SECONDS = 5.0
DB_SERVICES = ("auth", "bookmarks", "enrichment", "enrichment-worker")
PROBED = (*DB_SERVICES, "gateway")


@pytest.fixture(scope="module")
def hang_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data_dir = tmp_path_factory.mktemp("hang-stack")
    with scratch_data_dir("devstack-hang-", fallback=data_dir / "postgres") as pg_dir:
        config = StackConfig.for_tests(data_dir, services=True, extra_env=FULL_STACK_TEST_ENV, pg_data_dir=pg_dir)
        stack = Stack(config)
        stack.start()
        try:
            stack.supervise(interval=0.25)
            yield stack
        finally:
            stack.stop()


# --- what the clients saw ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    kind: str
    started: float
    seconds: float
    status: int  # 0: no HTTP answer at all
    retry_after: str | None


@dataclass
class Load:
    """Clients through the gateway: writers (PUT, each retried until acknowledged), readers (delta,
    /v1/me) and requests that need no database (JWKS, the gateway's /healthz)."""

    http: httpx.AsyncClient
    device: Device
    answers: list[Answer] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def _call(self, kind: str, method: str, path: str, **kwargs: object) -> httpx.Response | None:
        started = time.monotonic()
        response: httpx.Response | None = None
        with contextlib.suppress(httpx.HTTPError):
            response = await self.device.request(method, path, **kwargs)  # type: ignore[arg-type]
        status = response.status_code if response is not None else 0
        retry_after = response.headers.get("retry-after") if response is not None else None
        self.answers.append(Answer(kind, started, time.monotonic() - started, status, retry_after))
        return response

    async def writer(self, name: str) -> None:
        n = 0
        while not self.stop.is_set():
            bookmark_id = f"{name}-{n}"
            body = {"url": f"https://example.com/hang/{bookmark_id}", "title": bookmark_id}
            response = await self._call("write", "PUT", f"/v1/bookmarks/{bookmark_id}", json=body)
            if response is not None and response.status_code == 200:
                self.acknowledged.append(bookmark_id)
                n += 1
            await asyncio.sleep(0.05)

    async def reader(self) -> None:
        while not self.stop.is_set():
            await self._call("read", "GET", "/v1/bookmarks/delta", params={"limit": 20})
            await self._call("me", "GET", "/v1/me")
            await asyncio.sleep(0.05)

    async def no_database(self) -> None:
        while not self.stop.is_set():
            await self._call("jwks", "GET", "/v1/auth/jwks")
            await self._call("healthz", "GET", "/healthz")
            await asyncio.sleep(0.2)

    async def open_loop(self) -> None:
        """A read every 0.25 s whether or not the previous ones were answered (as many clients do): what
        piles up in the processes while answers are slow."""
        pending: set[asyncio.Task[httpx.Response | None]] = set()
        while not self.stop.is_set():
            task = asyncio.create_task(self._call("read", "GET", "/v1/bookmarks/delta", params={"limit": 5}))
            pending.add(task)
            task.add_done_callback(pending.discard)
            await asyncio.sleep(0.25)
        await asyncio.gather(*pending)

    def tasks(self) -> list[asyncio.Task[None]]:
        runs = [
            self.writer("a"),
            self.writer("b"),
            self.writer("c"),
            self.reader(),
            self.reader(),
            self.open_loop(),
            self.no_database(),
        ]
        return [asyncio.create_task(run) for run in runs]

    def between(self, start: float, end: float, *kinds: str) -> list[Answer]:
        return [a for a in self.answers if start <= a.started < end and a.kind in kinds]


@dataclass
class Probes:
    """Every service's /readyz and /healthz, asked directly, and per process: requests in flight (its
    metric) and TCP connections to PostgreSQL, sampled every half second."""

    stack: Stack
    ready: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    health: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    in_flight: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    connections: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        async with httpx.AsyncClient(timeout=15.0, trust_env=False) as http:
            while not self.stop.is_set():
                await asyncio.gather(*(self._sample(http, name) for name in PROBED))
                await asyncio.sleep(0.5)

    async def _sample(self, http: httpx.AsyncClient, name: str) -> None:
        now = time.monotonic()
        base = self.stack.service_url(name)
        for path, log in (("/readyz", self.ready), ("/healthz", self.health)):
            try:
                status = (await http.get(base + path)).status_code
            except httpx.HTTPError:
                status = 0
            log.setdefault(name, []).append((now, status))
        with contextlib.suppress(httpx.HTTPError):
            text = (await http.get(self.stack.metrics_url(name))).text
            if found := re.search(r"^http_requests_in_flight\{[^}]*\} (\S+)$", text, re.MULTILINE):
                self.in_flight.setdefault(name, []).append((now, float(found.group(1))))
        self.connections.setdefault(name, []).append((now, _pg_connections(self.stack, name)))

    def statuses(self, log: dict[str, list[tuple[float, int]]], name: str, start: float, end: float) -> list[int]:
        return [status for at, status in log.get(name, []) if start <= at < end]

    def peak(self, log: dict[str, list[tuple[float, float]]] | dict[str, list[tuple[float, int]]], name: str,
             start: float, end: float) -> float:  # fmt: skip
        return max((value for at, value in log.get(name, []) if start <= at < end), default=0.0)


def _pg_port(stack: Stack) -> int:
    port = urlsplit(plain_dsn(stack.dsn("bookmarks"))).port
    assert port is not None
    return port


def _pg_connections(stack: Stack, name: str) -> int:
    port = _pg_port(stack)
    try:
        process = psutil.Process(stack.service_processes[name].pid)
        return sum(1 for c in process.net_connections(kind="tcp") if c.raddr and c.raddr.port == port)
    except psutil.Error:
        return -1


# --- stopping processes ---------------------------------------------------------------------------


def _postgres_pids(stack: Stack) -> list[int]:
    """The postmaster (from its data directory's postmaster.pid) and all of its children."""
    assert stack.postgres is not None
    postmaster = int((Path(stack.postgres.data_dir) / "postmaster.pid").read_text().split("\n", 1)[0])
    children = [c.pid for c in psutil.Process(postmaster).children(recursive=True)]
    return [postmaster, *children]


def _broker_pids(stack: Stack) -> list[int]:
    assert stack.broker is not None and stack.broker.process is not None
    root = psutil.Process(stack.broker.process.pid)
    return [root.pid, *(c.pid for c in root.children(recursive=True))]


def _signal_all(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


@contextlib.contextmanager
def _stopped(pids: list[int]) -> Iterator[None]:
    """SIGSTOP every pid (the parent first, so it starts no new child meanwhile); SIGCONT on the way out,
    whatever happens."""
    _signal_all(pids, signal.SIGSTOP)
    try:
        yield
    finally:
        _signal_all(list(reversed(pids)), signal.SIGCONT)


# --- checks afterwards ----------------------------------------------------------------------------


async def _rows(stack: Stack, db: str, query: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(plain_dsn(stack.dsn(db)), timeout=10)
    try:
        return list(await conn.fetch(query))
    finally:
        await conn.close()


async def _dead_letters(stack: Stack) -> dict[str, int]:
    counts = {}
    for db in ("auth", "bookmarks", "enrichment"):
        with contextlib.suppress(asyncpg.UndefinedTableError):
            counts[db] = len(await _rows(stack, db, "SELECT 1 FROM dead_letters"))
    return counts


async def _outboxes_drained(stack: Stack) -> bool:
    for db in ("auth", "bookmarks", "enrichment"):
        if await _rows(stack, db, "SELECT 1 FROM outbox WHERE published_at IS NULL LIMIT 1"):
            return False
    return True


async def _projection(stack: Stack, user_id: str) -> set[str]:
    rows = await _rows(
        stack,
        "enrichment",
        f"SELECT client_bookmark_id FROM bookmark_urls WHERE user_id = '{uuid.UUID(user_id)}' AND NOT deleted",
    )
    return {r["client_bookmark_id"] for r in rows}


async def _all_ready(stack: Stack) -> bool:
    async with httpx.AsyncClient(timeout=5.0, trust_env=False) as http:
        for name in PROBED:
            for path in ("/readyz", "/healthz"):
                try:
                    if (await http.get(stack.service_url(name) + path)).status_code != 200:
                        return False
                except httpx.HTTPError:
                    return False
    return True


async def _nudged(stack: Stack, device: Device) -> bool:
    bookmark_id = f"nudge-{uuid.uuid4().hex[:6]}"
    with contextlib.suppress(Exception):
        async with nudge_socket(stack.gateway_url, device.token) as socket:
            await device.put(bookmark_id, {"url": f"https://example.com/hang/{bookmark_id}"})
            return bool(await socket.next(timeout=20) == {"type": "bookmarks_changed"})
    return False


def _distribution(answers: list[Answer]) -> dict[str, object]:
    seconds = sorted(a.seconds for a in answers)

    def pct(p: float) -> float:
        return round(seconds[min(len(seconds) - 1, int(p * len(seconds)))], 3) if seconds else 0.0

    statuses: dict[int, int] = {}
    for answer in answers:
        statuses[answer.status] = statuses.get(answer.status, 0) + 1
    return {"count": len(seconds), "p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "max": pct(1.0),
            "statuses": statuses}  # fmt: skip


def _report(title: str, load: Load, probes: Probes, start: float, end: float) -> None:
    report = {
        "database answers": _distribution(load.between(start, end, "write", "read", "me")),
        "no-database answers": _distribution(load.between(start, end, "jwks", "healthz")),
        "peak in flight": {n: probes.peak(probes.in_flight, n, start, end) for n in PROBED},
        "peak postgres connections": {n: probes.peak(probes.connections, n, start, end) for n in PROBED},
        "readyz": {n: sorted(set(probes.statuses(probes.ready, n, start, end))) for n in PROBED},
    }
    print(f"\n{title}: {json.dumps(report, indent=1)}")


async def _steady(load: Load, stack: Stack) -> None:
    before = len(load.acknowledged)
    await wait_for(lambda: _true_when(len(load.acknowledged) > before + 10), timeout=120, what="steady writes")
    await wait_for(lambda: _all_ready(stack), timeout=120, what="every probe 2xx")


async def _true_when(value: bool) -> bool:
    return value


# --- the scenarios --------------------------------------------------------------------------------


async def test_a_hanging_database_fails_fast_and_recovers_by_itself(hang_stack: Stack) -> None:
    stack = hang_stack
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=60.0, trust_env=False) as http:
        load = Load(http, await anonymous(http))
        probes = Probes(stack)
        tasks = [*load.tasks(), asyncio.create_task(probes.run())]
        try:
            await _steady(load, stack)
            with _stopped(_postgres_pids(stack)):
                hang_start = time.monotonic()
                await asyncio.sleep(HANG_SECONDS)
            hang_end = time.monotonic()
            await wait_for(lambda: _all_ready(stack), timeout=120, what="every probe 2xx after the hang")
            recovered = time.monotonic()
            before = len(load.acknowledged)
            await wait_for(lambda: _true_when(len(load.acknowledged) > before + 10), timeout=120, what="writes again")
        finally:
            load.stop.set()
            probes.stop.set()
            await asyncio.gather(*tasks)
        _report("database hang", load, probes, hang_start, hang_end)
        print(f"every probe 2xx {recovered - hang_end:.2f} s after SIGCONT (polled)")

        # Fail fast: while PostgreSQL hangs (and until the first answer started after it), every answer
        # of a request that needs it is 200 or 503 + Retry-After, within the deadline-derived bound.
        during = load.between(hang_start, hang_end, "write", "read", "me")
        assert during, "no request was made during the hang"
        assert {a.status for a in during} <= {200, 503}, _distribution(during)
        assert any(a.status == 503 for a in during), _distribution(during)
        assert all(a.retry_after for a in during if a.status == 503)
        assert max(a.seconds for a in during) < ANSWER_BOUND_SECONDS, _distribution(during)
        # Requests that need no database keep answering.
        plain = load.between(hang_start, hang_end, "jwks", "healthz")
        assert plain and {a.status for a in plain} == {200}, _distribution(plain)
        assert max(a.seconds for a in plain) < ANSWER_BOUND_SECONDS, _distribution(plain)

        # Honest readiness: every database-owning service said 503 during the hang, and /healthz never failed.
        for name in DB_SERVICES:
            assert 503 in probes.statuses(probes.ready, name, hang_start, hang_end + 1), name
            assert set(probes.statuses(probes.health, name, hang_start, hang_end + 60)) == {200}, name
        assert set(probes.statuses(probes.ready, "gateway", hang_start, hang_end)) == {200}

        # Nothing lost, nothing parked, the outbox drains, nudges flow, no process restarted.
        acknowledged = set(load.acknowledged)

        async def delta_has_all() -> bool:
            return acknowledged <= set((await load.device.fresh_replica()).records)

        await wait_for(delta_has_all, timeout=120, what="every acknowledged write in a fresh delta")
        await wait_for(lambda: _outboxes_drained(stack), timeout=120, what="outboxes drained")
        await wait_for(lambda: _nudged(stack, load.device), timeout=120, what="a nudge for a new write")
        assert await _dead_letters(stack) == {"auth": 0, "bookmarks": 0, "enrichment": 0}
    assert stack.healer is not None
    assert {name: stack.healer.restarts(name) for name in (*PROBED, "postgres")} == dict.fromkeys(
        (*PROBED, "postgres"), 0
    )


async def test_a_hanging_broker_keeps_writes_succeeding(hang_stack: Stack) -> None:
    stack = hang_stack
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=60.0, trust_env=False) as http:
        load = Load(http, await anonymous(http))
        probes = Probes(stack)
        tasks = [*load.tasks(), asyncio.create_task(probes.run())]
        try:
            await _steady(load, stack)
            with _stopped(_broker_pids(stack)):
                hang_start = time.monotonic()
                await asyncio.sleep(HANG_SECONDS)
            hang_end = time.monotonic()
        finally:
            load.stop.set()
            probes.stop.set()
            await asyncio.gather(*tasks)
        _report("broker hang", load, probes, hang_start, hang_end)

        writes = load.between(hang_start, hang_end, "write")
        assert writes and {a.status for a in writes} == {200}, _distribution(writes)
        assert max(a.seconds for a in writes) < ANSWER_BOUND_SECONDS, _distribution(writes)
        for name in PROBED:
            assert set(probes.statuses(probes.ready, name, hang_start, hang_end)) == {200}, name

        acknowledged = set(load.acknowledged)

        async def projection_has_all() -> bool:
            return acknowledged <= await _projection(stack, load.device.user_id)

        await wait_for(lambda: _outboxes_drained(stack), timeout=180, what="outboxes drained")
        await wait_for(projection_has_all, timeout=180, what="enrichment's projection has every write")
        await wait_for(lambda: _nudged(stack, load.device), timeout=180, what="a nudge for a new write")
        assert await _dead_letters(stack) == {"auth": 0, "bookmarks": 0, "enrichment": 0}
