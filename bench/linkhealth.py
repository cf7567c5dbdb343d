"""Link health benchmark (docs/api-guide.md, section 15; decision 0139): is the checker polite at scale,
does it spread checks over the month, does its queue stay bounded, what does a check cost, and what does
a burst of checks do to bookmark writes.

    .venv/bin/python bench/linkhealth.py [--urls 100000] [--users 1000] [--hosts 5000] [--days 30]

Starts its own stack (private data dir, free ports; the stack's own link checker off, so the only
checker is this benchmark's) and two parts:

  month   The real scheduler (``enrichment.worker.links.LinkChecker`` and ``enrichment.links``: the
          ``link_checks`` rows, the claim's ``FOR UPDATE SKIP LOCKED``, the leases, the rate row and the
          hosts' free times) on a fresh enrichment database of the stack's PostgreSQL, driven by a
          simulated clock: ``--urls`` saved URLs of ``--users`` users on ``--hosts`` hosts (one URL in
          ten on 10 popular hosts), all saved at the start (an import: the worst case for waves), then
          ``--days`` simulated days. Two checker
          replicas of 4 slots each claim concurrently; a probe is a simulated transport that answers
          like the site below (ok, moved, missing, refused, failing, hanging, unresolvable hosts) after a
          simulated latency, during which the clock moves on for the other slots. The clock jumps from
          event to event (a probe's answer, the next due check, the rate's next slot): a slot with
          nothing to claim sleeps until then instead of polling every 5 s, which changes no claim.
          Reported: checks per simulated day (max / mean), the least time between the end of one
          request to a host and the start of the next, the most requests to one host at once, the due
          queue (``enrichment.links.service.queue_stats`` every simulated hour: largest, oldest), and
          CPU ms per check of this process (the checker and the simulation's bookkeeping) and of
          PostgreSQL.
  burst   Real HTTP, real clock, the whole chain: ``--burst-bookmarks`` bookmarks saved through the
          gateway on 50 hosts of a local site (a separate process answering for every host name; the
          fetcher's resolver sends ``*.sim.test`` to 127.0.0.1, as the link tests do), projected by
          enrichment's consumer, then all made due at once (a backlog after an outage). The checker runs
          its real loops (4 slots, 5 s poll) with the SSRF-safe fetcher; results travel as
          ``link.checked`` through the outbox to bookmarks. Reported: CPU ms per check of every process
          (alone, at 20 checks/s), politeness on the wire, and bookmark PUT p50/p99 of 4 writers through
          the gateway without checks, during a burst at the default rate (2/s) and at 10× it.

Prints a table; writes ``bench/results/linkhealth-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import heapq
import ipaddress
import json
import os
import random
import socket
import sys
import tempfile
import time
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx
from result_files import write_results  # bench/ is on sys.path when this script runs
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from common.db import create_session_factory
from devstack.stack import Stack, StackConfig
from enrichment.domain.links import Hop, LinkPolicy
from enrichment.domain.model import SystemClock
from enrichment.fetch import Probe, SafeFetcher
from enrichment.links import service
from enrichment.worker.links import LinkCheckConfig, LinkChecker

T0 = datetime(2030, 1, 1, tzinfo=UTC)
POLICY = LinkPolicy(interval=timedelta(days=30), retry=timedelta(hours=24))  # the defaults
DEFAULT_RATE = 2.0  # LINK_CHECK_RATE_PER_SECOND's default
TIMEOUT_SECONDS = 10.0  # ENRICHMENT_FETCH_TIMEOUT_SECONDS's default
SIM_REPLICAS, SIM_SLOTS = 2, 4
BURST_HOSTS = 50
WRITERS = 4


def _plain(dsn: str) -> str:
    return dsn.replace("postgresql+asyncpg://", "postgresql://")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))], 1) if ordered else 0.0


# --- what the site answers (the simulated transport and the real local site agree) -------------------------


def answer_of(number: int, host_number: int) -> str:
    """What page ``number`` on host ``host_number`` does: ok 88 %, moved 3 %, missing 3 %, refused 2 %,
    failing 1 %, hanging 1 %, an unresolvable host (1 host in 100) whatever the page."""
    if host_number % 100 == 99:
        return "dns"
    kind = number % 100
    if kind < 88:
        return "ok"
    if kind < 91:
        return "moved"
    if kind < 94:
        return "missing"
    if kind < 96:
        return "refused"
    if kind < 97:
        return "failing"
    if kind < 98:
        return "hanging"
    return "ok"


STATUS_OF = {"ok": 200, "missing": 404, "refused": 403, "failing": 503}


def _numbers(url: str) -> tuple[str, int, int]:
    parts = urlsplit(url)
    host = parts.hostname or ""
    host_number = int(host.split(".", 1)[0].lstrip("hb") or 0)
    page = parts.path.rsplit("/", 1)[-1]
    return host, host_number, int(page) if page.isdigit() else 0


def serve_site() -> None:
    """The local site (run as its own process, ``--serve-site``): answers for every host name."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self, body: bool) -> None:
            host_number = int((self.headers.get("host") or "h0").split(".", 1)[0].lstrip("hb") or 0)
            path = self.path.split("?", 1)[0]
            number = int(path.rsplit("/", 1)[-1]) if path.rsplit("/", 1)[-1].isdigit() else 0
            kind = "ok" if path.startswith("/moved/") else answer_of(number, host_number)
            if kind == "moved":
                self.send_response(301)
                self.send_header("location", f"/moved/{number}")
                self.send_header("content-length", "0")
                self.end_headers()
                return
            if kind == "hanging":
                kind = "failing"  # the month simulates hangs; here they would only hold a thread
            if kind == "dns":
                kind = "ok"  # every name resolves here
            payload = b"<!doctype html><title>page</title>" + b"x" * 2000
            self.send_response(STATUS_OF.get(kind, 200))
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            if body:
                self.wfile.write(payload)

        def do_GET(self) -> None:  # noqa: N802 - http.server's API
            self._answer(True)

        def do_HEAD(self) -> None:  # noqa: N802 - http.server's API
            self._answer(False)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


# --- politeness, as the site sees it ---------------------------------------------------------------------


class Politeness:
    """Every request (one check's probe) per host: the least gap between one's end and the next one's
    start, and the most in flight at once."""

    def __init__(self) -> None:
        self.in_flight: dict[str, int] = defaultdict(int)
        self.last_end: dict[str, datetime] = {}
        self.max_in_flight = 0
        self.min_gap: float | None = None
        self.requests = 0
        self.per_day: dict[int, int] = defaultdict(int)

    def start(self, host: str, at: datetime) -> None:
        self.requests += 1
        self.per_day[(at - T0).days] += 1
        self.in_flight[host] += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight[host])
        previous = self.last_end.get(host)
        if previous is not None:
            gap = (at - previous).total_seconds()
            self.min_gap = gap if self.min_gap is None else min(self.min_gap, gap)

    def end(self, host: str, at: datetime) -> None:
        self.in_flight[host] -= 1
        self.last_end[host] = at


# --- the simulated clock -----------------------------------------------------------------------------------


class SimClock:
    def __init__(self, start: datetime) -> None:
        self._now = start

    def now(self) -> datetime:
        return self._now

    def set(self, when: datetime) -> None:
        self._now = max(self._now, when)


class Simulation:
    """Discrete events for concurrent slots: each slot runs until it waits, either for a timer (a probe's
    answer) or for work (idle). When every slot waits, the clock jumps to the next event: the earliest
    timer, or, for one idle slot, the next due check (no earlier than the global rate's next slot)."""

    STEP = timedelta(seconds=0.25)  # a due check whose host is busy: look again this much later

    def __init__(self, clock: SimClock, slots: int, next_due: Callable[[], Awaitable[datetime | None]]) -> None:
        self.clock = clock
        self.running = slots
        self.timers: list[tuple[datetime, int, asyncio.Future[None]]] = []
        self.idle: deque[asyncio.Future[None]] = deque()
        self.rate_free_at: datetime | None = None
        self.tried_at: datetime | None = None
        self.blocked = asyncio.Event()
        self.next_due = next_due
        self._seq = 0

    def _wait(self) -> None:
        self.running -= 1
        if self.running == 0:
            self.blocked.set()

    async def sleep_until(self, when: datetime) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._seq += 1
        heapq.heappush(self.timers, (when, self._seq, future))
        self._wait()
        await future

    async def wait_for_work(self, retry_at: datetime | None) -> None:
        now = self.clock.now()
        self.tried_at = now
        if retry_at is not None and (self.rate_free_at is None or retry_at > self.rate_free_at):
            self.rate_free_at = retry_at
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.idle.append(future)
        self._wait()
        await future

    async def run(self, end: datetime, every_hour: Callable[[datetime], Awaitable[None]]) -> None:
        next_hour = self.clock.now() + timedelta(hours=1)
        while True:
            await self.blocked.wait()
            self.blocked.clear()
            now = self.clock.now()
            at_timer = self.timers[0][0] if self.timers else None
            at_work: datetime | None = None
            if self.idle:
                due = await self.next_due()
                if due is not None:
                    at_work = now + self.STEP if due <= now and self.tried_at == now else max(due, now)
                    if self.rate_free_at is not None and at_work < self.rate_free_at:
                        at_work = self.rate_free_at
            times = [t for t in (at_timer, at_work) if t is not None]
            if not times or min(times) >= end:
                return
            when = min(times)
            while next_hour <= when:
                self.clock.set(next_hour)
                await every_hour(next_hour)
                next_hour += timedelta(hours=1)
            self.clock.set(when)
            if at_timer is not None and at_timer <= when:
                while self.timers and self.timers[0][0] <= when:
                    _, _, future = heapq.heappop(self.timers)
                    self.running += 1
                    future.set_result(None)
            else:
                self.running += 1
                self.idle.popleft().set_result(None)


class SimulatedTransport:
    """The checker's fetcher in the month: answers like the site after a latency on the simulated clock
    (each host its own, 40-400 ms; a hanging page the whole timeout; an unresolvable host 20 ms)."""

    def __init__(self, sim: Simulation, politeness: Politeness) -> None:
        self.sim = sim
        self.politeness = politeness

    async def probe(self, url: str, *, timeout_seconds: float, max_redirects: int | None = None) -> Probe:
        clock = self.sim.clock
        host, host_number, number = _numbers(url)
        started = clock.now()
        self.politeness.start(host, started)
        kind = answer_of(number, host_number)
        latency = 0.04 + (host_number * 7919 % 360) / 1000
        if kind == "dns":
            result, latency = Probe(hops=(), failure="dns"), 0.02
        elif kind == "hanging":
            result, latency = Probe(hops=(), failure="timeout"), timeout_seconds
        elif kind == "moved":
            target = f"http://{host}/moved/{number}"
            result, latency = Probe(hops=(Hop(url, 301, target), Hop(target, 200))), 2 * latency
        else:
            status = STATUS_OF[kind]
            result = Probe(hops=(Hop(url, status),))
            if status >= 400:
                latency *= 2  # HEAD, then the small GET
        await self.sim.sleep_until(started + timedelta(seconds=latency))
        self.politeness.end(host, clock.now())
        return result


# --- CPU of the stack's processes ----------------------------------------------------------------------------


def cpu_seconds() -> dict[str, float]:
    """CPU seconds so far of this process and of each part of the stack (their process trees)."""
    from run import stack_cpu_seconds  # bench/ is on sys.path when this script runs

    return stack_cpu_seconds()


def cpu_ms_per(before: dict[str, float], after: dict[str, float], count: int) -> dict[str, float]:
    return {k: round((after[k] - before.get(k, 0.0)) * 1000 / max(1, count), 3) for k in sorted(after)}


# --- month ----------------------------------------------------------------------------------------------------

# One URL in ten is on one of 10 popular hosts (a thousand or more each a month), the rest spread evenly.
SEED_URLS_SQL = """
INSERT INTO bookmark_urls (user_id, client_bookmark_id, normalized_url, deleted, position)
SELECT ('00000000-0000-4000-8000-' || lpad((g % $2)::text, 12, '0'))::uuid, 'bm-' || g,
       'http://h' || (CASE WHEN g % 10 = 0 THEN (g / 10) % 10 ELSE g % $3 END) || '.sim.test/p/' || g,
       false, $4::timestamptz
FROM generate_series(0, $1 - 1) AS g
"""


async def bench_month(stack: Stack, args: argparse.Namespace) -> dict[str, Any]:
    dsn = stack.fresh_database("enrichment")
    conn = await asyncpg.connect(_plain(dsn))
    try:
        await conn.execute(SEED_URLS_SQL, args.urls, args.users, args.hosts, T0)
        await conn.execute("ANALYZE bookmark_urls")
    finally:
        await conn.close()
    engine = create_async_engine(dsn, pool_size=SIM_REPLICAS * SIM_SLOTS + 2)
    sessions = create_session_factory(engine)
    clock = SimClock(T0)
    politeness = Politeness()

    async def next_due() -> datetime | None:
        async with sessions() as session:
            found = await session.execute(text("SELECT min(due_at) FROM link_checks"))
            value: datetime | None = found.scalar_one()
            return value

    sim = Simulation(clock, SIM_REPLICAS * SIM_SLOTS, next_due)
    transport = SimulatedTransport(sim, politeness)
    rng = random.Random(139)
    config = LinkCheckConfig(policy=POLICY, rate_per_second=DEFAULT_RATE, timeout_seconds=TIMEOUT_SECONDS)
    checkers = [
        LinkChecker(
            sessions=sessions,
            fetcher=transport,  # type: ignore[arg-type]  # the simulated transport has probe() only
            clock=clock,
            config=config,
            worker_id=f"sim-{replica}",
            jitter=rng.random,
        )
        for replica in range(SIM_REPLICAS)
    ]
    began = time.perf_counter()
    scheduled = await checkers[0].schedule()
    schedule_s = time.perf_counter() - began
    queue: list[tuple[float, int, float]] = []

    async def every_hour(at: datetime) -> None:
        stats = await service.queue_stats(sessions=sessions, now=at)
        queue.append(((at - T0).total_seconds() / 86400, stats.due, stats.oldest_due_seconds))
        if at.hour == 0:
            print(f"bench: day {(at - T0).days}: {politeness.requests} checks", flush=True)

    async def slot(checker: LinkChecker) -> None:
        while True:
            claimed = await checker.check_one()
            if claimed.leased is None:
                await sim.wait_for_work(claimed.retry_at)

    cpu_before = cpu_seconds()
    began = time.perf_counter()
    tasks = [asyncio.create_task(slot(c)) for c in checkers for _ in range(SIM_SLOTS)]
    try:
        await sim.run(T0 + timedelta(days=args.days), every_hour)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    wall_s = time.perf_counter() - began
    cpu_after = cpu_seconds()
    checks = politeness.requests
    async with sessions() as session:
        results = dict((await session.execute(text("SELECT last_result, count(*) FROM link_checks GROUP BY 1"))).all())
        statuses = dict((await session.execute(text("SELECT status, count(*) FROM link_checks GROUP BY 1"))).all())
        events = (await session.execute(text("SELECT count(*) FROM outbox"))).scalar_one()
    await engine.dispose()
    days = [politeness.per_day.get(d, 0) for d in range(args.days)]
    mean = sum(days) / len(days)
    cpu = cpu_ms_per(cpu_before, cpu_after, checks)
    return {
        "urls": args.urls,
        "users": args.users,
        "hosts": args.hosts,
        "days": args.days,
        "replicas_x_slots": f"{SIM_REPLICAS}x{SIM_SLOTS}",
        "scheduled": scheduled,
        "schedule_s": round(schedule_s, 1),
        "checks": checks,
        "link_checked_events": events,
        "per_day": days,
        "day_max": max(days),
        "day_min": min(days),
        "day_mean": round(mean, 1),
        "day_max_over_mean": round(max(days) / mean, 3) if mean else None,
        "min_host_gap_s": None if politeness.min_gap is None else round(politeness.min_gap, 3),
        "max_in_flight_per_host": politeness.max_in_flight,
        "queue_due_max": max((q[1] for q in queue), default=0),
        "queue_oldest_due_max_s": round(max((q[2] for q in queue), default=0.0), 1),
        "last_results": {str(k): v for k, v in sorted(results.items(), key=lambda kv: str(kv[0]))},
        "statuses": {str(k): v for k, v in sorted(statuses.items(), key=lambda kv: str(kv[0]))},
        "wall_s": round(wall_s, 1),
        "cpu_ms_per_check": {
            "bench process (checker + simulation)": cpu.get("load-generator", 0.0),
            "postgres": cpu.get("postgres", 0.0),
        },
    }


# --- burst ------------------------------------------------------------------------------------------------------


class LoggedFetcher:
    """The real SafeFetcher, its probes logged for politeness on the real clock."""

    def __init__(self, fetcher: SafeFetcher, politeness: Politeness) -> None:
        self.fetcher = fetcher
        self.politeness = politeness
        self.checks = 0

    async def probe(self, url: str, *, timeout_seconds: float, max_redirects: int | None = None) -> Probe:
        host = urlsplit(url).hostname or ""
        self.politeness.start(host, datetime.now(UTC))
        try:
            return await self.fetcher.probe(url, timeout_seconds=timeout_seconds, max_redirects=max_redirects)
        finally:
            self.politeness.end(host, datetime.now(UTC))
            self.checks += 1


@contextlib.asynccontextmanager
async def local_site() -> AsyncIterator[int]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--serve-site", stdout=asyncio.subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        yield int(await process.stdout.readline())
    finally:
        process.terminate()
        await process.wait()


async def sign_in(http: httpx.AsyncClient) -> dict[str, str]:
    session = (await http.post("/v1/auth/anonymous")).raise_for_status().json()
    return {"Authorization": f"Bearer {session['accessToken']}"}


async def bench_burst(stack: Stack, args: argparse.Namespace) -> dict[str, Any]:
    async with (
        local_site() as port,
        httpx.AsyncClient(base_url=stack.gateway_url, timeout=60) as http,
    ):
        users = [await sign_in(http) for _ in range(args.burst_users)]
        per_user = -(-args.burst_bookmarks // len(users))

        async def save(u: int, headers: dict[str, str]) -> None:
            for i in range(per_user):
                n = u * per_user + i
                url = f"http://b{n % BURST_HOSTS}.sim.test:{port}/p/{n}"
                (await http.put(f"/v1/bookmarks/lh-{n}", json={"url": url}, headers=headers)).raise_for_status()

        await asyncio.gather(*(save(u, h) for u, h in enumerate(users)))
        saved = per_user * len(users)
        enrichment_dsn = stack.dsn("enrichment")
        conn = await asyncpg.connect(_plain(enrichment_dsn))
        try:
            projected = "SELECT count(*) FROM bookmark_urls WHERE client_bookmark_id LIKE 'lh-%'"
            for _ in range(600):  # enrichment's consumer projects the saves
                if await conn.fetchval(projected) >= saved:
                    break
                await asyncio.sleep(0.5)
        finally:
            await conn.close()

        async def resolve(host: str, port: int) -> list[str]:
            if host.endswith(".sim.test"):
                return ["127.0.0.1"]
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

        engine = create_async_engine(enrichment_dsn)
        sessions = create_session_factory(engine)
        politeness = Politeness()
        loopback = ipaddress.ip_address("127.0.0.1")
        results: dict[str, Any] = {"bookmarks": saved, "hosts": BURST_HOSTS}
        try:
            async with SafeFetcher(
                timeout_seconds=TIMEOUT_SECONDS,
                user_agent="linkhealth-bench/1.0",
                resolver=resolve,
                address_policy=lambda address: address != loopback,
            ) as real:
                fetcher = LoggedFetcher(real, politeness)

                def checker(rate: float) -> LinkChecker:
                    return LinkChecker(
                        sessions=sessions,
                        fetcher=fetcher,  # type: ignore[arg-type]  # SafeFetcher's probe, logged
                        clock=SystemClock(),
                        config=LinkCheckConfig(policy=POLICY, rate_per_second=rate, timeout_seconds=TIMEOUT_SECONDS),
                        worker_id=f"bench-{rate}",
                    )

                await checker(DEFAULT_RATE).schedule()
                conn = await asyncpg.connect(_plain(enrichment_dsn))
                try:
                    # A backlog (a day without checks): everything due, in the jittered order of the schedule.
                    await conn.execute("UPDATE link_checks SET due_at = now() - random() * interval '1 day'")
                finally:
                    await conn.close()

                @contextlib.asynccontextmanager
                async def checking(rate: float) -> AsyncIterator[None]:
                    task = asyncio.create_task(checker(rate).run())
                    try:
                        yield
                    finally:
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await task

                # CPU per check, the checks alone at 10x the default rate.
                before, done = cpu_seconds(), fetcher.checks
                async with checking(10 * DEFAULT_RATE):
                    await asyncio.sleep(args.window)
                await asyncio.sleep(3)  # the results' events reach bookmarks: counted too
                checks = fetcher.checks - done
                results["cpu_checks"] = checks
                results["cpu_ms_per_check"] = cpu_ms_per(before, cpu_seconds(), checks)

                writers = [await sign_in(http) for _ in range(WRITERS)]
                stop = asyncio.Event()

                async def write(n: int, headers: dict[str, str], latencies: list[float]) -> None:
                    i = 0
                    while not stop.is_set():
                        body = {"url": f"https://writer.example/{n}/{i}", "title": f"Write {i}"}
                        began = time.perf_counter()
                        (await http.put(f"/v1/bookmarks/w{n}-{i}", json=body, headers=headers)).raise_for_status()
                        latencies.append((time.perf_counter() - began) * 1000)
                        i += 1

                async def window(rate: float | None) -> dict[str, Any]:
                    latencies: list[float] = []
                    stop.clear()
                    done = fetcher.checks
                    tasks = [asyncio.create_task(write(n, h, latencies)) for n, h in enumerate(writers)]
                    if rate is None:
                        await asyncio.sleep(args.window)
                    else:
                        async with checking(rate):
                            await asyncio.sleep(args.window)
                    stop.set()
                    await asyncio.gather(*tasks)
                    return {
                        "puts": len(latencies),
                        "p50_ms": pct(latencies, 0.5),
                        "p99_ms": pct(latencies, 0.99),
                        "checks": fetcher.checks - done,
                    }

                results["writes_quiet"] = await window(None)
                results["writes_burst_default_rate"] = await window(DEFAULT_RATE)
                results["writes_burst_10x_rate"] = await window(10 * DEFAULT_RATE)
        finally:
            await engine.dispose()
        results["min_host_gap_s"] = None if politeness.min_gap is None else round(politeness.min_gap, 3)
        results["max_in_flight_per_host"] = politeness.max_in_flight
        results["requests"] = politeness.requests
        return results


# --- report ------------------------------------------------------------------------------------------------------


def table(result: dict[str, Any]) -> str:
    month, burst = result["month"], result["burst"]
    cpu = burst["cpu_ms_per_check"]
    rows = [
        ("month: checks (simulated transport)", f"{month['checks']:,} in {month['days']} days", ""),
        ("checks per day: max / mean", f"{month['day_max']} / {month['day_mean']}", f"{month['day_max_over_mean']}×"),
        ("same host: least gap, most at once", f"{month['min_host_gap_s']} s", f"{month['max_in_flight_per_host']}"),
        ("due queue: largest, oldest", f"{month['queue_due_max']}", f"{month['queue_oldest_due_max_s']} s"),
        ("CPU ms/check: checker process, PostgreSQL", *month["cpu_ms_per_check"].values()),
        ("burst: checks for CPU (real HTTP)", f"{burst['cpu_checks']}", ""),
        *((f"CPU ms/check: {'checker process' if k == 'load-generator' else k}", f"{v}", "") for k, v in cpu.items()),
        (
            "burst: same host least gap, most at once",
            f"{burst['min_host_gap_s']} s",
            f"{burst['max_in_flight_per_host']}",
        ),
    ]
    for key, name in (
        ("writes_quiet", "PUT p50 / p99, no checks"),
        ("writes_burst_default_rate", "PUT p50 / p99, burst at 2/s"),
        ("writes_burst_10x_rate", "PUT p50 / p99, burst at 20/s"),
    ):
        w = burst[key]
        rows.append((name, f"{w['p50_ms']} / {w['p99_ms']} ms", f"{w['puts']} PUTs, {w['checks']} checks"))
    return "\n".join(f"{name:44} {what:>28} {value:>24}" for name, what, value in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=1_000)
    parser.add_argument("--hosts", type=int, default=5_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--burst-bookmarks", type=int, default=1_500)
    parser.add_argument("--burst-users", type=int, default=10)
    parser.add_argument("--window", type=float, default=20.0, help="seconds of each burst and write window")
    parser.add_argument("--only", choices=("month", "burst"))
    parser.add_argument("--serve-site", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_site:
        serve_site()
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-linkhealth-") as data_dir:
        config = StackConfig.for_tests(
            Path(data_dir),
            output=open(os.devnull, "w"),  # noqa: SIM115
            extra_env={
                "LINK_CHECK_ENABLED": "false",  # this benchmark's checker is the only one
                "ANTI_ENTROPY_INTERVAL_SECONDS": "0",
                "ENRICHMENT_ALLOW_PRIVATE_NETWORKS": "true",
                "GATEWAY_RATE_LIMIT_PER_MINUTE": "10000000",
                "GATEWAY_IP_RATE_LIMIT_PER_MINUTE": "10000000",
                "AUTH_ANONYMOUS_RATE_LIMIT_PER_MINUTE": "10000000",
            },
        )
        with Stack(config) as stack:
            result: dict[str, Any] = {"when": datetime.now(UTC).isoformat(timespec="seconds")}
            if args.only != "burst":
                result["month"] = asyncio.run(bench_month(stack, args))
                print(f"bench: month = {json.dumps(result['month'])}", flush=True)
            if args.only != "month":
                result["burst"] = asyncio.run(bench_burst(stack, args))
                print(f"bench: burst = {json.dumps(result['burst'])}", flush=True)
    if "month" in result and "burst" in result:
        print(table(result))
    path = write_results("linkhealth", result)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
