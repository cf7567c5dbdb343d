"""CPU of the bookmarks process per write, direct to the service, with the stack's default configuration.

``.venv/bin/python bench/bookmarks_write_cpu.py [--writes 1600] [--delta 20000]``

Starts its own stack (private data dir, free ports, the services' default settings: INFO logs, access
lines, tracing as shipped), takes tokens from auth, then sends to the bookmarks service directly (no
gateway) at concurrency 16, one user per worker:

  create   PUT of a new bookmark
  update   PUT of an existing bookmark with a changed title
  delete   DELETE of an existing bookmark

and reports the bookmarks process's CPU (user + system, its whole process tree) per request, plus the
delta read path: initial sync of N bookmarks with limit=1000 and the API page / raw SQL keyset ratio.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil

from devstack.stack import Stack, StackConfig

CONCURRENCY = 16
IDLE_SECONDS = 10.0
IDLE: dict[int, float] = {}  # pid -> CPU seconds per second with no traffic
RAW_PAGE_SQL = """
SELECT * FROM bookmarks WHERE owner_uid = $1 AND (updated_at, client_bookmark_id) > ($2, $3)
ORDER BY updated_at, client_bookmark_id LIMIT $4
"""
SEED_ROWS_SQL = """
INSERT INTO user_streams (owner_uid, last_position) VALUES ($1, $2::timestamptz + ($3::int) * interval '1 microsecond')
ON CONFLICT (owner_uid) DO UPDATE SET last_position = EXCLUDED.last_position;
INSERT INTO bookmarks (owner_uid, client_bookmark_id, url, normalized_url, domain, title, description, tags,
                       collection_ids, created_at, updated_at, enrichment_status, snapshot_status)
SELECT $1, 'seed-' || lpad(g::text, 7, '0'), 'https://site' || (g % 997) || '.example/p/' || g,
       'https://site' || (g % 997) || '.example/p/' || g, 'site' || (g % 997) || '.example',
       'Seeded bookmark number ' || g, 'A description long enough to look like a real page summary ' || g,
       ARRAY['tag' || (g % 13), 'seed'], ARRAY['inbox'],
       $2::timestamptz + g * interval '1 microsecond', $2::timestamptz + g * interval '1 microsecond',
       'completed', 'ready'
FROM generate_series(1, $3) AS g
"""


def _cpu_seconds(pid: int) -> float:
    root = psutil.Process(pid)
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


async def anonymous_users(gateway: str, count: int) -> list[tuple[str, dict[str, str]]]:
    async with httpx.AsyncClient(base_url=gateway, timeout=30) as http:
        out = []
        for _ in range(count):
            session = (await http.post("/v1/auth/anonymous")).raise_for_status().json()
            out.append((session["user"]["id"], {"Authorization": f"Bearer {session['accessToken']}"}))
        return out


async def _phase(
    pid: int, per_worker: int, call: Callable[[int, int], Awaitable[httpx.Response]], expect: int
) -> dict[str, Any]:
    latencies: list[float] = []

    async def worker(w: int) -> None:
        for i in range(per_worker):
            t0 = time.perf_counter()
            response = await call(w, i)
            latencies.append(time.perf_counter() - t0)
            if response.status_code != expect:
                raise RuntimeError(f"{response.status_code}: {response.text[:200]}")

    cpu0, t0 = _cpu_seconds(pid), time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(CONCURRENCY)))
    cpu1, elapsed = _cpu_seconds(pid), time.perf_counter() - t0
    n = per_worker * CONCURRENCY
    latencies.sort()
    return {
        "requests": n,
        "cpu_ms_per_request": round((cpu1 - cpu0) * 1000 / n, 3),
        # Net of what the process burns idle (its timers and pollers) over the same wall time: on a loaded
        # machine throughput varies from run to run, and idle burn divided by it would vary with it.
        "net_cpu_ms_per_request": round((cpu1 - cpu0 - IDLE[pid] * elapsed) * 1000 / n, 3),
        "per_s": round(n / elapsed, 1),
        "p50_ms": round(latencies[n // 2] * 1000, 2),
        "p99_ms": round(latencies[min(n - 1, int(n * 0.99))] * 1000, 2),
    }


async def bench_writes(base: str, pid: int, users: list[tuple[str, dict[str, str]]], writes: int) -> dict[str, Any]:
    per_worker = max(1, writes // CONCURRENCY)
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(base_url=base, timeout=30, limits=limits) as http:

        def put(title: str) -> Callable[[int, int], Awaitable[httpx.Response]]:
            def call(w: int, i: int) -> Awaitable[httpx.Response]:
                body = {"url": f"https://example.com/{w}/{i}", "title": f"{title} {i}", "tags": ["a", "b"]}
                return http.put(f"/v1/bookmarks/b{i}", json=body, headers=users[w][1])

            return call

        def delete(w: int, i: int) -> Awaitable[httpx.Response]:
            return http.delete(f"/v1/bookmarks/b{i}", headers=users[w][1])

        # Warm up (connections, statement caches) on another bookmark id.
        for w in range(CONCURRENCY):
            await http.put("/v1/bookmarks/warm", json={"url": "https://example.com/w"}, headers=users[w][1])
        return {
            "create": await _phase(pid, per_worker, put("created"), 200),
            "update": await _phase(pid, per_worker, put("updated"), 200),
            "delete": await _phase(pid, per_worker, delete, 204),
        }


async def bench_delta(base: str, pid: int, dsn: str, user: tuple[str, dict[str, str]], count: int) -> dict[str, Any]:
    owner, headers = uuid.UUID(user[0]), user[1]
    conn = await asyncpg.connect(dsn.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        base_ts = datetime(2026, 1, 1, tzinfo=UTC)
        for statement in SEED_ROWS_SQL.split(";\n"):
            await conn.execute(statement, owner, base_ts, count)
        await conn.execute("ANALYZE bookmarks")
        page_times: list[float] = []
        positions: list[tuple[datetime, str]] = [(datetime(1970, 1, 1, tzinfo=UTC), "")]
        async with httpx.AsyncClient(base_url=base, timeout=60) as http:
            cursor: str | None = None
            cpu0, started = _cpu_seconds(pid), time.perf_counter()
            while True:
                params: dict[str, Any] = {"limit": 1000} | ({"cursor": cursor} if cursor else {})
                t0 = time.perf_counter()
                response = await http.get("/v1/bookmarks/delta", params=params, headers=headers)
                page_times.append(time.perf_counter() - t0)
                data = response.raise_for_status().json()["data"]
                if data["upserts"]:
                    last = data["upserts"][-1]
                    positions.append((datetime.fromisoformat(last["updatedAt"]), last["clientBookmarkId"]))
                if (cursor := data["nextCursor"]) is None:
                    break
            total = time.perf_counter() - started
            cpu = _cpu_seconds(pid) - cpu0 - IDLE[pid] * total
        raw_times = []
        for at, rid in positions[:-1]:
            t0 = time.perf_counter()
            await conn.fetch(RAW_PAGE_SQL, owner, at, rid, 1001)
            raw_times.append(time.perf_counter() - t0)
    finally:
        await conn.close()
    return {
        "bookmarks": count,
        "total_s": round(total, 2),
        "bookmarks_net_cpu_ms_per_page": round(cpu * 1000 / len(page_times), 1),
        "page_p50_ms": round(statistics.median(page_times) * 1000, 1),
        "raw_page_p50_ms": round(statistics.median(raw_times) * 1000, 1),
        "api_raw_ratio": round(statistics.median(page_times) / statistics.median(raw_times), 2),
    }


async def run(stack: Stack, args: argparse.Namespace) -> dict[str, Any]:
    pid = stack.service_processes["bookmarks"].pid
    base = stack.service_url("bookmarks")
    users = await anonymous_users(stack.gateway_url, CONCURRENCY + 1)
    await asyncio.sleep(2)  # let start-up work settle
    cpu0 = _cpu_seconds(pid)
    await asyncio.sleep(IDLE_SECONDS)
    IDLE[pid] = (_cpu_seconds(pid) - cpu0) / IDLE_SECONDS
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "idle_cpu_ms_per_s": round(IDLE[pid] * 1000, 1),
        "writes": await bench_writes(base, pid, users, args.writes),
        "delta": await bench_delta(base, pid, stack.dsn("bookmarks"), users[-1], args.delta),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=1600, help="requests per phase (create/update/delete)")
    parser.add_argument("--delta", type=int, default=20_000, help="bookmarks in the delta sync")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-bookmarks-") as data_dir:
        config = StackConfig.for_tests(Path(data_dir), output=open("/dev/null", "w"))  # noqa: SIM115, PTH123
        with Stack(config) as stack:
            result = asyncio.run(run(stack, args))
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
