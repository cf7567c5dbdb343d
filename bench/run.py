"""Benchmarks of the whole platform, co-located on this machine.

``make bench`` (quick, a few minutes) or ``make bench BENCH_ARGS=--full``. Starts its own stack (private
data dir, free ports, durable PostgreSQL) with ``make run``'s defaults -- INFO logs, access lines, tracing
as shipped -- and, with ``--also quiet``, a second stack at ``LOG_LEVEL=WARNING`` reported beside it, never
instead of it. ``--only writes idle nudge`` runs a subset. Prints a table per configuration and writes
``bench/results/<timestamp>.json`` and ``bench/results/latest.json``. On a shared machine trust the CPU
per operation (process CPU seconds, not wall time) more than the latencies.

Measured:
  writes      through the gateway, one user per worker: create at c1, c16, c64; update and delete of the
              c16 bookmarks at c16; throughput, p50/p99, errors, CPU ms per write of every process of the
              stack (its whole process tree, PostgreSQL backends included; the load generator apart)
  idle        CPU ms per second of every process with no traffic (BENCH_IDLE_SECONDS, 20 s), after
              BENCH_IDLE_SETTLE_SECONDS (3 s) without any; at rest, the consumers' idle pace: 65 s
  delta       initial sync of N bookmarks with limit=1000: total, page p50/p99, last/first page ratio,
              API page time / raw SQL keyset query time
  gateway     the same request direct to the bookmarks service and through the gateway: p50 ratio
  nudge       PUT → bookmarks_changed on a WebSocket of the same user: p50/p99
  enrichment  jobs per minute over plain HTTP against a local site; cache-hit enqueue p50/p99
  header_flood  a normal request's p50/p99 quiet vs during a flood of hostile-header requests
              (bench/header_flood.py, also runnable on its own)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import httpx
import websockets
from header_flood import bench_header_flood  # bench/ is on sys.path when this script runs
from result_files import RESULTS_DIR

ADMIN_TOKEN = "bench-admin-token"  # noqa: S105 - a local, throwaway stack


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


class Api:
    def __init__(self, base_url: str) -> None:
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
        self.http = httpx.AsyncClient(base_url=base_url, timeout=30, limits=limits)
        self.base_url = base_url

    async def new_user(self, *, pro: bool = False, use_ai: bool = False) -> tuple[str, dict[str, str]]:
        session = (await self.http.post("/v1/auth/anonymous")).raise_for_status().json()
        headers = {"Authorization": f"Bearer {session['accessToken']}"}
        user_id = session["user"]["id"]
        if pro:
            response = await self.http.put(
                f"/v1/admin/users/{user_id}/subscription", json={"isPro": True}, headers={"X-Admin-Token": ADMIN_TOKEN}
            )
            response.raise_for_status()
        if use_ai:
            (await self.http.patch("/v1/me/settings", json={"useAi": True}, headers=headers)).raise_for_status()
        return user_id, headers


async def timed(call: Callable[[], Awaitable[httpx.Response]], expect: tuple[int, ...] = (200,)) -> float:
    started = time.perf_counter()
    response = await call()
    elapsed = time.perf_counter() - started
    if response.status_code not in expect:
        raise RuntimeError(f"unexpected {response.status_code}: {response.text[:200]}")
    return elapsed


# --- writes -------------------------------------------------------------------------------------------


def _part_of(proc: Any) -> str | None:
    """Which part of the stack a process is (PostgreSQL summed over its backends), or None."""
    cmd = " ".join(proc.info["cmdline"] or [])
    if " -m " in cmd and "devstack" not in cmd:
        return str(cmd.split(" -m ", 1)[1].split()[0])
    if proc.info["name"] == "postgres" or cmd.startswith("postgres") or "/postgres " in cmd:
        return "postgres"
    if "tansu" in cmd:
        return "broker"
    return None


def stack_cpu_seconds() -> dict[str, float]:
    """CPU seconds used so far by each part of the stack this bench started (its whole process tree,
    PostgreSQL backends included; never another stack on the machine), and by the load generator.

    A process's reaped children count too (``children_user``/``children_system``): PostgreSQL's postmaster
    reaps every backend that exits, so a backend that came and went between two samples is still counted
    (without this the PostgreSQL figure could even come out negative)."""
    import psutil

    me = psutil.Process()
    totals: dict[str, float] = {}
    times = me.cpu_times()
    totals[LOAD_GENERATOR] = times.user + times.system
    for proc in me.children(recursive=True):
        try:
            with proc.oneshot():
                proc.info = {"cmdline": proc.cmdline(), "name": proc.name()}
                part = _part_of(proc)
                if part is None:
                    continue
                times = proc.cpu_times()
            used = times.user + times.system + times.children_user + times.children_system
            totals[part] = totals.get(part, 0.0) + used
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return totals


LOAD_GENERATOR = "load-generator"


def cpu_ms_per_op(before: dict[str, float], after: dict[str, float], operations: int) -> dict[str, Any]:
    """Per-process CPU ms per operation; the total is the stack's, the load generator apart."""
    per = {part: round((after[part] - before.get(part, 0.0)) * 1000 / max(1, operations), 2) for part in sorted(after)}
    stack = {k: v for k, v in per.items() if k != LOAD_GENERATOR}
    return {
        "cpu_ms_per_op": stack,
        "cpu_ms_per_op_total": round(sum(stack.values()), 2),
        "load_generator_cpu_ms_per_op": per.get(LOAD_GENERATOR, 0.0),
    }


def _write(
    http: aiohttp.ClientSession, op: str, path: str, n: int, headers: dict[str, str]
) -> Callable[[], Awaitable[int]]:
    """One write (its status once the whole answer is read): create, update or delete of ``path``."""
    if op == "delete":
        return lambda: _status(http.delete(path, headers=headers))
    body = {
        "url": f"https://site{n % 50}.example/article/{path.rsplit('/', 1)[-1]}",
        "title": f"Bookmark {n}" if op == "create" else f"Bookmark {n} (edited)",
        "notes": "benchmark",
        "collectionIds": ["inbox"],
    }
    return lambda: _status(http.put(path, json=body, headers=headers))


async def _status(request: Any) -> int:
    async with request as response:
        await response.read()
        return int(response.status)


WARM_UP_WRITES = 3


async def write_round(api: Api, op: str, users: list[dict[str, str]], per_worker: int, tag: str) -> dict[str, Any]:
    """``per_worker`` timed writes by each user at once (one user per worker): create, update or delete.

    The load generator is aiohttp, one session and connection per worker, made before anything runs:
    httpx spent about 1 ms of CPU per request here (its pure-Python HTTP/1.1 machinery), on a machine
    whose two cores the stack under test needs; aiohttp parses with C and costs a fraction of that (the
    figure is printed as ``load_generator_cpu_ms_per_op``). One client shared by 64 workers was worse
    still: httpcore's pool scans every connection and waiting request on each one.

    Each worker's first ``WARM_UP_WRITES`` writes are untimed, and it goes straight on without waiting for
    the others: the percentiles describe ``concurrency`` clients writing steadily, not the moment they
    all start in the same millisecond onto pools still growing (that first wave was every one of the
    slowest 1 % at c64; its slowest write is reported apart as ``warm_up_max_ms``). Throughput and CPU
    are counted from the moment the last worker has finished its warm-up, over the writes that end
    after it. The load generator's own heap is frozen before it starts, as the services freeze theirs
    (``common.server.freeze_startup_heap``): its full collections took 28-40 ms during a round, and every
    request in flight waited for them."""
    latencies: list[float] = []
    warm_up: list[float] = []
    ends: list[float] = []
    errors: list[str] = []
    clock: list[tuple[float, dict[str, float]]] = []  # (start, CPU then): set once, by the last warm worker
    warming = len(users)

    async def worker(http: aiohttp.ClientSession, index: int, headers: dict[str, str]) -> None:
        nonlocal warming
        for n in range(WARM_UP_WRITES + per_worker):
            started = time.perf_counter()
            try:
                status = await _write(http, op, f"/v1/bookmarks/{tag}-{index}-{n}", n, headers)()
                ok, detail = status in (200, 201, 204), str(status)
            except (aiohttp.ClientError, TimeoutError) as exc:
                ok, detail = False, type(exc).__name__
            ended = time.perf_counter()
            (warm_up if n < WARM_UP_WRITES else latencies).append(ended - started)
            ends.append(ended)
            if not ok:
                errors.append(detail)
            if n == WARM_UP_WRITES - 1:
                warming -= 1
                if warming == 0:
                    cpu = stack_cpu_seconds()
                    clock.append((time.perf_counter(), cpu))

    async with contextlib.AsyncExitStack() as stack:
        timeout = aiohttp.ClientTimeout(total=30)
        clients = [
            await stack.enter_async_context(
                aiohttp.ClientSession(base_url=api.base_url, timeout=timeout, connector=aiohttp.TCPConnector(limit=1))
            )
            for _ in users
        ]
        gc.collect()
        gc.freeze()
        await asyncio.gather(*(worker(client, i, h) for i, (client, h) in enumerate(zip(clients, users, strict=True))))
    ((clock_start, cpu_before),) = clock
    counted = sum(1 for ended in ends if ended > clock_start)
    wall = max(ends) - clock_start
    await asyncio.sleep(1.5)  # let the events of these writes reach their consumers: counted too
    cpu_after = stack_cpu_seconds()
    return {
        "requests": len(latencies),
        "errors": len(errors),
        "error_kinds": sorted(set(errors))[:5],
        "throughput_rps": round(counted / wall, 1),
        "p50_ms": ms(pct(latencies, 50)),
        "p99_ms": ms(pct(latencies, 99)),
        "warm_up_max_ms": ms(max(warm_up)),
        **cpu_ms_per_op(cpu_before, cpu_after, counted),
    }


WRITE_ROUNDS = ("c1", "c16", "c16_update", "c16_delete", "c64")


async def bench_writes(api: Api, *, c16_writes: int, c64_writes: int, rounds: tuple[str, ...]) -> dict[str, Any]:
    """c1 (latency), c16 create / update / delete over ``c16_writes`` each, c64 create over ``c64_writes``
    (errors, p99; as many as c16: over 1,000 the p99 is the 10th slowest write and moved by ±40 ms between
    runs)."""
    results: dict[str, Any] = {}
    plan = [
        (1, max(50, c16_writes // 30), ("create",)),
        (16, c16_writes, ("create", "update", "delete")),
        (64, c64_writes, ("create",)),
    ]
    for concurrency, total, all_ops in plan:
        ops = tuple(op for op in all_ops if (f"c{concurrency}" if op == "create" else f"c{concurrency}_{op}") in rounds)
        if not ops:
            continue
        users = [(await api.new_user())[1] for _ in range(concurrency)]
        per_worker = max(1, -(-total // concurrency))
        for op in ops:
            key = f"c{concurrency}" if op == "create" else f"c{concurrency}_{op}"
            print(f"bench: writes {key} ({per_worker * concurrency}) …", flush=True)
            results[key] = await write_round(api, op, users, per_worker, f"w{concurrency}")
            print(f"bench: writes {key} = {json.dumps(results[key])}", flush=True)
    return results


# --- idle ---------------------------------------------------------------------------------------------


async def bench_idle(*, seconds: float, settle: float) -> dict[str, Any]:
    """CPU of every process of the stack with no traffic at all, in ms per second, after ``settle``
    seconds without traffic (the tail of the previous step; at rest, the consumers' idle pace)."""
    await asyncio.sleep(settle)
    before = stack_cpu_seconds()
    started = time.perf_counter()
    await asyncio.sleep(seconds)
    elapsed = time.perf_counter() - started
    after = stack_cpu_seconds()
    per = {
        part: round((after[part] - before.get(part, 0.0)) * 1000 / elapsed, 1)
        for part in sorted(after)
        if part != LOAD_GENERATOR
    }
    return {"seconds": round(elapsed, 1), "cpu_ms_per_s": per, "cpu_ms_per_s_total": round(sum(per.values()), 1)}


# --- delta --------------------------------------------------------------------------------------------


SEED_SQL = """
INSERT INTO user_streams (owner_uid, last_position) VALUES ($1, $2::timestamptz + ($3::int) * interval '1 microsecond')
ON CONFLICT (owner_uid) DO UPDATE SET last_position = EXCLUDED.last_position;
"""
SEED_ROWS_SQL = """
INSERT INTO bookmarks (owner_uid, client_bookmark_id, url, normalized_url, domain, title, description, tags,
                       collection_ids, notes, created_at, updated_at, enrichment_status, snapshot_status)
SELECT $1, 'seed-' || lpad(g::text, 7, '0'), 'https://site' || (g % 997) || '.example/p/' || g,
       'https://site' || (g % 997) || '.example/p/' || g, 'site' || (g % 997) || '.example',
       'Seeded bookmark number ' || g, 'A description long enough to look like a real page summary ' || g,
       ARRAY['tag' || (g % 13), 'seed'], ARRAY['inbox'], NULL,
       $2::timestamptz + g * interval '1 microsecond', $2::timestamptz + g * interval '1 microsecond',
       'completed', 'ready'
FROM generate_series(1, $3) AS g
"""
# The baseline reads every column a page's rows hold, as ``SELECT *`` did before the stored wire document
# (migration 0006) was added: that column is what the API page reads, so the raw page leaves it out.
RAW_PAGE_SQL = """
SELECT owner_uid, client_bookmark_id, url, normalized_url, domain, title, description, thumbnail_url, summary,
       save_why, tags, enrichment_status, snapshot_status, last_error_code, is_favorite, collection_ids, user_tags,
       is_archived, notes, client_saved_at, last_opened_at, created_at, updated_at, enriched_at, deleted_at,
       search_vector, search_head, search_config, search_tags, search_page_text, search_page_vector
FROM bookmarks WHERE owner_uid = $1 AND (updated_at, client_bookmark_id) > ($2, $3)
ORDER BY updated_at, client_bookmark_id LIMIT $4
"""


async def bench_delta(api: Api, *, bookmarks_dsn: str, count: int) -> dict[str, Any]:
    user_id, headers = await api.new_user()
    conn = await asyncpg.connect(bookmarks_dsn.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        base = datetime(2026, 1, 1, tzinfo=UTC)
        owner = uuid.UUID(user_id)
        await conn.execute(SEED_SQL, owner, base, count)
        await conn.execute(SEED_ROWS_SQL, owner, base, count)
        await conn.execute("ANALYZE bookmarks")

        page_times: list[float] = []
        positions: list[tuple[datetime, str]] = []
        cursor: str | None = None
        records = 0
        started = time.perf_counter()
        while True:
            params: dict[str, Any] = {"limit": 1000} | ({"cursor": cursor} if cursor else {})
            t0 = time.perf_counter()
            response = await api.http.get("/v1/bookmarks/delta", params=params, headers=headers)
            page_times.append(time.perf_counter() - t0)
            data = response.raise_for_status().json()["data"]
            records += len(data["upserts"]) + len(data["tombstones"])
            if data["upserts"]:
                last = data["upserts"][-1]
                positions.append((datetime.fromisoformat(last["updatedAt"]), last["clientBookmarkId"]))
            if data["nextCursor"] is None:
                break
            cursor = data["nextCursor"]
        total = time.perf_counter() - started

        raw_times: list[float] = []
        previous = (datetime(1970, 1, 1, tzinfo=UTC), "")
        for position in positions:
            t0 = time.perf_counter()
            await conn.fetch(RAW_PAGE_SQL, owner, previous[0], previous[1], 1001)
            raw_times.append(time.perf_counter() - t0)
            previous = position
        plan = await conn.fetch("EXPLAIN " + RAW_PAGE_SQL, owner, base, "", 1001)
    finally:
        await conn.close()
    first, last = statistics.median(page_times[:3]), statistics.median(page_times[-4:-1] or page_times[-1:])
    return {
        "bookmarks": count,
        "records_synced": records,
        "pages": len(page_times),
        "total_s": round(total, 2),
        "page_p50_ms": ms(pct(page_times, 50)),
        "page_p99_ms": ms(pct(page_times, 99)),
        "last_first_ratio": round(last / first, 2),
        "api_raw_ratio": round(statistics.median(page_times) / statistics.median(raw_times), 2),
        "raw_page_p50_ms": ms(pct(raw_times, 50)),
        "query_plan": " | ".join(r[0].strip() for r in plan),
    }


# --- gateway overhead ---------------------------------------------------------------------------------


async def bench_gateway(api: Api, *, bookmarks_url: str, samples: int) -> dict[str, Any]:
    _, headers = await api.new_user()
    await api.http.put("/v1/bookmarks/g1", json={"url": "https://g.example/"}, headers=headers)
    async with httpx.AsyncClient(base_url=bookmarks_url, timeout=30) as direct:
        via_gw: list[float] = []
        via_direct: list[float] = []
        for _ in range(samples):
            via_direct.append(
                await timed(lambda: direct.get("/v1/bookmarks/delta", params={"limit": 1}, headers=headers))
            )
            via_gw.append(
                await timed(lambda: api.http.get("/v1/bookmarks/delta", params={"limit": 1}, headers=headers))
            )
    return {
        "samples": samples,
        "direct_p50_ms": ms(pct(via_direct, 50)),
        "gateway_p50_ms": ms(pct(via_gw, 50)),
        "p50_ratio": round(pct(via_gw, 50) / pct(via_direct, 50), 2),
    }


# --- nudge latency ------------------------------------------------------------------------------------


async def bench_nudge(api: Api, *, samples: int) -> dict[str, Any]:
    session = (await api.http.post("/v1/auth/anonymous")).raise_for_status().json()
    token = session["accessToken"]
    headers = {"Authorization": f"Bearer {token}"}
    ws_url = api.base_url.replace("http://", "ws://").replace("https://", "wss://") + f"/v1/events?access_token={token}"
    latencies: list[float] = []
    async with websockets.connect(ws_url) as socket:
        await asyncio.sleep(0.5)  # let the gateway register the socket before the first write
        for i in range(samples):
            started = time.perf_counter()
            await api.http.put(f"/v1/bookmarks/n{i}", json={"url": f"https://n{i}.example/"}, headers=headers)
            while True:
                message = json.loads(await asyncio.wait_for(socket.recv(), timeout=10))
                if message.get("type") == "bookmarks_changed":
                    break
            latencies.append(time.perf_counter() - started)
            await asyncio.sleep(0.05)  # outside the coalescing window, so each sample is its own nudge
    return {"samples": samples, "p50_ms": ms(pct(latencies, 50)), "p99_ms": ms(pct(latencies, 99))}


# --- enrichment ---------------------------------------------------------------------------------------


class LocalSite:
    """Article-like pages on 127.0.0.1 for the enrichment worker to fetch."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                n = self.path.strip("/").split("/")[-1]
                body = (
                    f"<html lang='en'><head><title>Article {n} about distributed systems</title>"
                    f"<meta name='description' content='Benchmark article {n}'>"
                    f"<meta property='og:image' content='/img/{n}.png'></head><body><article>"
                    + "".join(
                        f"<p>Paragraph {k} of article {n} explains consensus, replication and partition "
                        f"tolerance in distributed databases with practical advice for engineers.</p>"
                        for k in range(12)
                    )
                    + "</article></body></html>"
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


async def bench_enrichment(api: Api, *, jobs: int) -> dict[str, Any]:
    site = LocalSite()
    try:
        _, headers = await api.new_user(pro=True, use_ai=True)
        run = uuid.uuid4().hex[:6]
        ids = [f"e{i}" for i in range(jobs)]
        for i, bid in enumerate(ids):
            url = f"{site.url}/{run}/{i}"
            await api.http.put(f"/v1/bookmarks/{bid}", json={"url": url}, headers=headers)
        started = time.perf_counter()
        for i, bid in enumerate(ids):
            body = {"clientBookmarkId": bid, "url": f"{site.url}/{run}/{i}", "clientSavedAt": "2026-11-22T00:00:00Z"}
            response = await api.http.post("/v1/enrichment/enqueue", json=body, headers=headers)
            if response.status_code not in (200, 202):
                raise RuntimeError(f"enqueue failed: {response.status_code} {response.text}")
        pending = set(ids)
        failed = 0
        while pending and time.perf_counter() - started < 600:
            for bid in list(pending):
                status = (
                    await api.http.get("/v1/enrichment/status", params={"clientBookmarkId": bid}, headers=headers)
                ).json()["data"]["status"]
                if status in ("completed", "failed"):
                    pending.discard(bid)
                    failed += status == "failed"
            await asyncio.sleep(0.2)
        elapsed = time.perf_counter() - started

        _, other = await api.new_user(pro=True, use_ai=True)
        hits: list[float] = []
        for i in range(jobs):
            body = {
                "clientBookmarkId": f"h{i}",
                "url": f"{site.url}/{run}/{i}",
                "clientSavedAt": "2026-11-22T00:00:00Z",
            }
            hits.append(await timed(lambda b=body: api.http.post("/v1/enrichment/enqueue", json=b, headers=other)))
    finally:
        site.close()
    return {
        "jobs": jobs,
        "unfinished": len(pending),
        "failed": failed,
        "jobs_per_minute": round((jobs - len(pending)) / elapsed * 60, 1),
        "cache_hit_enqueue_p50_ms": ms(pct(hits, 50)),
        "cache_hit_enqueue_p99_ms": ms(pct(hits, 99)),
    }


# --- driver -------------------------------------------------------------------------------------------


TARGETS = {
    "writes.c16.cpu_ms_per_op_total": ("<=", 6),
    "writes.c16.throughput_rps": (">=", 250),
    "writes.c16.p99_ms": ("<=", 60),
    "writes.c16_update.cpu_ms_per_op_total": ("<=", 6),
    "writes.c16_update.throughput_rps": (">=", 250),
    "writes.c16_update.p99_ms": ("<=", 60),
    "writes.c16_delete.cpu_ms_per_op_total": ("<=", 6),
    "writes.c16_delete.throughput_rps": (">=", 250),
    "writes.c16_delete.p99_ms": ("<=", 60),
    "writes.c64.errors": ("<=", 0),
    "writes.c64.p99_ms": ("<=", 250),
    "idle.cpu_ms_per_s_total": ("<=", 20),
    "delta.total_s": ("<=", 4.5),
    "delta.last_first_ratio": ("<=", 1.5),
    "delta.api_raw_ratio": ("<=", 5),
    "gateway.p50_ratio": ("<=", 1.3),
    "nudge.p50_ms": ("<=", 50),
    "nudge.p99_ms": ("<=", 250),
    "enrichment.jobs_per_minute": (">=", 300),
    "enrichment.cache_hit_enqueue_p99_ms": ("<=", 20),
    "header_flood.p99_ratio": ("<=", 2),
}

# The configuration people run (``make run``'s and the chart's defaults: INFO logs, access lines, tracing
# as shipped, durable PostgreSQL) is always measured; ``--also quiet`` adds a second one beside it.
CONFIGS: dict[str, dict[str, str]] = {
    "default": {},
    "quiet": {"LOG_LEVEL": "WARNING"},
}
# idle first: measured on a stack that has only started, before any step leaves work behind; writes last,
# for the same reason: its 13,000 writes leave the stack busy for a while (their events, enrichment jobs,
# autovacuum), and the delta pages measured right after them were 3 ms slower (17.5 against 14.4 ms).
STEPS = ("idle", "nudge", "delta", "gateway", "enrichment", "header_flood", "writes")


def print_table(results: dict[str, Any]) -> None:
    print(f"\n[{results['config']}] {results['config_env'] or 'make run defaults'}")
    speed = results.get("machine", {}).get("python_loop_cpu_s")
    if speed:
        print(
            f"machine speed: {CALIBRATION_STEPS:,}-step Python loop took {speed['start']} s of CPU at the start, "
            f"{speed['end']} s at the end (lower is faster)"
        )
    print(f"{'benchmark':<52} {'value':>12}  target")
    print("-" * 80)
    for section, values in results["benchmarks"].items():
        for key, value in _flatten(values):
            name = f"{section}.{key}"
            if name.endswith("query_plan"):
                continue
            target = TARGETS.get(name)
            mark = ""
            if target and isinstance(value, int | float):
                op, bound = target
                ok = value >= bound if op == ">=" else value <= bound
                mark = f"{op} {bound}  {'ok' if ok else 'MISSED'}"
            print(f"{name:<52} {value!s:>12}  {mark}")


BASELINE = Path(__file__).resolve().parent / "baseline.json"
BASELINE_KEY = "writes.c16.cpu_ms_per_op_total"


def _value(results: dict[str, Any], key: str) -> Any:
    return dict(_flatten(results["benchmarks"])).get(key)


def print_baseline(results: dict[str, Any]) -> None:
    """CPU per c16 create against the stored baseline (bench/baseline.json, the last release's figure):
    the raw ratio and the ratio adjusted by each run's machine speed (the calibration loop)."""
    if not BASELINE.is_file() or (current := _value(results, BASELINE_KEY)) is None:
        return
    base = json.loads(BASELINE.read_text())
    ratio = current / base["cpu_ms_per_op_total"]
    loop = results.get("machine", {}).get("python_loop_cpu_s", {}).get("start")
    adjusted = ratio * base["python_loop_cpu_s"] / loop if loop else None
    print(
        f"\nCPU per c16 create: {current} ms; baseline {base['cpu_ms_per_op_total']} ms "
        f"({base['tree']}, {base['measured']}): {ratio:.2f}x"
        + (f", {adjusted:.2f}x adjusted for machine speed" if adjusted else "")
    )


def save_baseline(paths: list[Path], tree: str) -> None:
    """bench/baseline.json from the median run of the result files ``paths`` (written by this script,
    in any version, on the tree ``tree``: the last release's)."""
    runs = [json.loads(path.read_text())["runs"][0] for path in paths]
    figures = sorted(runs, key=lambda r: _value(r, BASELINE_KEY))
    middle = figures[len(figures) // 2]
    document = {
        "tree": tree,
        "measured": middle["when"][:10],
        "cpu_ms_per_op_total": _value(middle, BASELINE_KEY),
        "cpu_ms_per_op": middle["benchmarks"]["writes"]["c16"]["cpu_ms_per_op"],
        "throughput_rps": _value(middle, "writes.c16.throughput_rps"),
        "p99_ms": _value(middle, "writes.c16.p99_ms"),
        "python_loop_cpu_s": middle["machine"]["python_loop_cpu_s"]["start"],
        "rounds": [_value(r, BASELINE_KEY) for r in runs],
    }
    BASELINE.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {BASELINE}: {document['cpu_ms_per_op_total']} ms per c16 create (median of {document['rounds']})")


def _flatten(values: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in values.items():
        if isinstance(value, dict):
            out += _flatten(value, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", value))
    return out


async def run_all(args: argparse.Namespace, gateway_url: str, bookmarks_url: str, bookmarks_dsn: str) -> dict[str, Any]:
    quick = not args.full
    speed_at_start = python_loop_cpu_s()
    api = Api(gateway_url)
    benchmarks: dict[str, Any] = {}
    c16_writes = int(os.environ.get("BENCH_WRITES", "3008" if quick else "6000"))
    rounds = tuple(args.writes or WRITE_ROUNDS)
    steps: dict[str, Callable[[], Awaitable[dict[str, Any]]]] = {
        "writes": lambda: bench_writes(api, c16_writes=c16_writes, c64_writes=c16_writes, rounds=rounds),
        "idle": lambda: bench_idle(
            seconds=float(os.environ.get("BENCH_IDLE_SECONDS", "20")),
            settle=float(os.environ.get("BENCH_IDLE_SETTLE_SECONDS", "3")),
        ),
        "nudge": lambda: bench_nudge(api, samples=60 if quick else 200),
        "delta": lambda: bench_delta(api, bookmarks_dsn=bookmarks_dsn, count=20_000 if quick else 100_000),
        "gateway": lambda: bench_gateway(api, bookmarks_url=bookmarks_url, samples=200 if quick else 1000),
        "enrichment": lambda: bench_enrichment(api, jobs=40 if quick else 300),
        "header_flood": lambda: bench_header_flood(gateway_url, samples=200 if quick else 1000, rate=100.0),
    }
    try:
        for name in STEPS:
            if args.only and name not in args.only:
                continue
            print(f"bench: {name} …", flush=True)
            started = time.perf_counter()
            try:
                benchmarks[name] = await steps[name]()
            except Exception as exc:  # one broken benchmark must not hide the others' figures
                benchmarks[name] = {"error": f"{type(exc).__name__}: {exc}"}
            print(f"bench: {name} done in {time.perf_counter() - started:.1f}s", flush=True)
            print(f"bench: {name} = {json.dumps(benchmarks[name])}", flush=True)  # kept if a later step hangs
    finally:
        await api.http.aclose()
    return {
        "mode": "quick" if quick else "full",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": _cpus(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_avg_1m_at_end": round(os.getloadavg()[0], 2),
            "python_loop_cpu_s": {"start": speed_at_start, "end": python_loop_cpu_s()},
        },
        "benchmarks": benchmarks,
    }


def _cpus() -> int:
    return os.cpu_count() or 0


CALIBRATION_STEPS = 5_000_000


def python_loop_cpu_s() -> float:
    """CPU seconds of a fixed pure-Python loop in this process: the machine's speed at this moment, so
    figures from different machines or hours can be told apart (a shared VM's speed varies). Lower is
    faster."""
    started = time.process_time()
    total = 0
    for i in range(CALIBRATION_STEPS):
        total += i
    return round(time.process_time() - started, 3)


@contextlib.contextmanager
def bench_stack(name: str = "default") -> Iterator[Any]:
    """A private stack (free ports, scratch data dir, durable PostgreSQL like ``make run``) with the
    configuration ``name`` on top of ``make run``'s defaults; only what the load itself needs is added (an
    admin token, no rate limiting of one machine)."""
    from dataclasses import replace

    from devstack.stack import Stack, StackConfig

    with tempfile.TemporaryDirectory(prefix="bench-") as data_dir:
        config = StackConfig.for_tests(
            Path(data_dir),
            extra_env={
                "ADMIN_TOKEN": ADMIN_TOKEN,
                "ENRICHMENT_ALLOW_PRIVATE_NETWORKS": "true",
                "ENRICHMENT_BROWSER": "off",
                "GATEWAY_RATE_LIMIT_PER_MINUTE": "10000000",
                "GATEWAY_IP_RATE_LIMIT_PER_MINUTE": "10000000",
                "AUTH_ANONYMOUS_RATE_LIMIT_PER_MINUTE": "10000000",
                **CONFIGS[name],
            },
            output=open(Path(data_dir) / "stack.log", "w"),  # noqa: SIM115 - lives as long as the stack
        )
        # Generous start-up limits: on a shared, loaded machine migrations alone can take minutes.
        config = replace(config, durable_postgres=True, migration_timeout=900.0, ready_timeout=900.0)
        print(f"bench: starting the stack ({name}) …", flush=True)
        with Stack(config) as stack:
            yield stack


def run_config(args: argparse.Namespace, name: str) -> dict[str, Any]:
    """Run the benchmarks against a :func:`bench_stack` of the configuration ``name``."""
    with bench_stack(name) as stack:
        results = asyncio.run(run_all(args, stack.gateway_url, stack.service_url("bookmarks"), stack.dsn("bookmarks")))
    return {"config": name, "config_env": CONFIGS[name]} | results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="smaller sizes, a few minutes (default)")
    mode.add_argument("--full", action="store_true", help="the sizes of the targets (100k delta sync, …)")
    parser.add_argument("--only", nargs="*", choices=STEPS, help="run only these steps")
    parser.add_argument("--writes", nargs="*", choices=WRITE_ROUNDS, help="only these rounds of the writes step")
    parser.add_argument(
        "--also",
        nargs="*",
        default=[],
        choices=[c for c in CONFIGS if c != "default"],
        help="a second configuration measured beside the default one (quiet: LOG_LEVEL=WARNING)",
    )
    parser.add_argument(
        "--save-baseline",
        nargs="+",
        type=Path,
        metavar="RESULTS",
        help="store the median of these result files (runs of the last release's tree) as bench/baseline.json",
    )
    parser.add_argument("--tree", help="with --save-baseline: the commit the results were measured on")
    args = parser.parse_args()

    if args.save_baseline:
        save_baseline(args.save_baseline, args.tree or "unknown")
        return 0
    runs = [run_config(args, name) for name in ["default", *args.also]]
    RESULTS_DIR.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    document = {"runs": runs}
    for path in (RESULTS_DIR / f"{stamp}-{runs[0]['mode']}.json", RESULTS_DIR / "latest.json"):
        path.write_text(json.dumps(document, indent=2))
    for results in runs:
        print_table(results)
    print_baseline(runs[0])
    print(f"\nresults written to {RESULTS_DIR / 'latest.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
