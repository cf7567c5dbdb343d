"""Curation benchmark (docs/api-guide.md, section 14): bulk changes and their undo, restoring a mass
delete, listing duplicates, and the trash's retention purge, on a 100,000-bookmark library.

    .venv/bin/python bench/curation.py [--count 100000] [--samples 30]

Starts its own stack (private data dir, free ports, no per-user rate limit), signs a user in through
the gateway and bulk-loads ``--count`` bookmarks into its library (one in ten archived, one in ten a
second copy of another's URL: about 10,000 duplicate groups). Then, through the gateway:

  bulk         POST /v1/bookmarks/bulk {favorite, query "is:archived"} (10,000 matches): the call, and
               the call plus a device catching up in delta (pages of 1,000) until it has all 10,000
  undo         POST /v1/bookmarks/bulk/undo of it
  restore      2,000 bookmarks deleted (two bulk calls by ids), then POST /v1/trash/restore {deletedSince}
  duplicates   GET /v1/duplicates?limit=20, the first ``--samples`` pages followed by cursor: p50, p99
  purge        100,000 trashed bookmarks of 100 other users, deleted 40 days ago, purged by the
               service's retention pass (run here against the same database), while 4 other users write
               (PUT) through the gateway: the pass's time, and their PUT p50/p99 before and during it

Prints a table; writes ``bench/results/curation-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from result_files import write_results  # bench/ is on sys.path when this script runs
from sqlalchemy.ext.asyncio import create_async_engine

import bookmarks.main  # noqa: F401 - installs search's index, as the service's own process does
from bookmarks.trash.service import purge_expired
from common.db import create_session_factory
from devstack.stack import Stack, StackConfig

SEED_LIBRARY_SQL = """
INSERT INTO user_streams (owner_uid, last_position)
VALUES ($1, $2::timestamptz + ($3::int + 100) * interval '1 microsecond')
ON CONFLICT (owner_uid) DO UPDATE SET last_position = EXCLUDED.last_position;
"""
SEED_ROWS_SQL = """
INSERT INTO bookmarks (owner_uid, client_bookmark_id, url, normalized_url, domain, title, user_tags, is_archived,
                       created_at, updated_at, enrichment_status, snapshot_status)
SELECT $1, 'seed-' || lpad(g::text, 7, '0'), u, u, 'site' || (p % 997) || '.example', 'Seeded bookmark ' || g,
       ARRAY['mine' || (g % 7)], g % 10 = 0,
       $2::timestamptz + (100 + g) * interval '1 microsecond', $2::timestamptz + (100 + g) * interval '1 microsecond',
       'completed', 'ready'
FROM generate_series(1, $3) AS g,
     LATERAL (SELECT CASE WHEN g % 10 = 1 THEN g - 1 ELSE g END AS p) AS page,
     LATERAL (SELECT 'https://site' || (p % 997) || '.example/p/' || p AS u) AS x
"""
SEED_TRASH_SQL = """
INSERT INTO bookmarks (owner_uid, client_bookmark_id, url, normalized_url, domain, title, created_at, updated_at,
                       deleted_at, enrichment_status, snapshot_status)
SELECT ('00000000-0000-4000-8000-' || lpad((g % 100)::text, 12, '0'))::uuid, 'gone-' || g,
       'https://old.example/' || g, 'https://old.example/' || g, 'old.example', 'Long gone ' || g,
       $1::timestamptz, $1::timestamptz + g * interval '1 microsecond', $1::timestamptz + g * interval '1 microsecond',
       'completed', 'ready'
FROM generate_series(1, $2) AS g
"""


def _plain(dsn: str) -> str:
    return dsn.replace("postgresql+asyncpg://", "postgresql://")


async def sign_in(http: httpx.AsyncClient) -> tuple[uuid.UUID, dict[str, str]]:
    session = (await http.post("/v1/auth/anonymous")).raise_for_status().json()
    return uuid.UUID(session["user"]["id"]), {"Authorization": f"Bearer {session['accessToken']}"}


async def seed(dsn: str, owner: uuid.UUID, count: int) -> None:
    conn = await asyncpg.connect(_plain(dsn))
    try:
        base = datetime(2025, 1, 1, tzinfo=UTC)
        await conn.execute(SEED_LIBRARY_SQL, owner, base, count)
        await conn.execute(SEED_ROWS_SQL, owner, base, count)
        await conn.execute("ANALYZE bookmarks")
    finally:
        await conn.close()


async def timed(call: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    began = time.perf_counter()
    result = await call()
    return (time.perf_counter() - began) * 1000, result


async def delta_end(http: httpx.AsyncClient, headers: dict[str, str]) -> str | None:
    """The cursor a device holds after a full sync (the last request's)."""
    cursor: str | None = None
    while True:
        params = {"limit": "1000", **({"cursor": cursor} if cursor else {})}
        data = (await http.get("/v1/bookmarks/delta", params=params, headers=headers)).raise_for_status().json()["data"]
        if data["nextCursor"] is None:
            return cursor
        cursor = data["nextCursor"]


async def catch_up(http: httpx.AsyncClient, headers: dict[str, str], cursor: str | None, want: int) -> int:
    seen: set[str] = set()
    while True:
        params = {"limit": "1000", **({"cursor": cursor} if cursor else {})}
        data = (await http.get("/v1/bookmarks/delta", params=params, headers=headers)).raise_for_status().json()["data"]
        seen.update(r["clientBookmarkId"] for r in data["upserts"] if r["isFavorite"])
        if data["nextCursor"] is None:
            if len(seen) < want:
                raise RuntimeError(f"delta shows {len(seen)} of {want} changes")
            return len(seen)
        cursor = data["nextCursor"]


async def bench_bulk(http: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, Any]:
    cursor = await delta_end(http, headers)
    began = time.perf_counter()
    response = await http.post(
        "/v1/bookmarks/bulk", json={"action": "favorite", "query": "is:archived"}, headers=headers
    )
    done = response.raise_for_status().json()["data"]
    call_ms = (time.perf_counter() - began) * 1000
    await catch_up(http, headers, cursor, done["affected"])
    visible_ms = (time.perf_counter() - began) * 1000
    undo_ms, undone = await timed(
        lambda: http.post("/v1/bookmarks/bulk/undo", json={"undoToken": done["undoToken"]}, headers=headers)
    )
    return {
        "affected": done["affected"],
        "call_ms": round(call_ms),
        "visible_in_delta_ms": round(visible_ms),
        "undo_ms": round(undo_ms),
        "undo": undone.raise_for_status().json()["data"],
    }


async def bench_restore(http: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, Any]:
    since = datetime.now(UTC).isoformat()
    ids = [f"seed-{n:07d}" for n in range(2, 4002, 2)]
    for part in (ids[:1000], ids[1000:]):
        response = await http.post("/v1/bookmarks/bulk", json={"action": "delete", "ids": part}, headers=headers)
        response.raise_for_status()
    ms, response = await timed(lambda: http.post("/v1/trash/restore", json={"deletedSince": since}, headers=headers))
    return {"restored": response.raise_for_status().json()["data"]["restored"], "restore_ms": round(ms)}


async def bench_duplicates(http: httpx.AsyncClient, headers: dict[str, str], samples: int) -> dict[str, Any]:
    times, cursor, groups = [], None, 0
    for _ in range(samples):
        params = {"limit": "20", **({"cursor": cursor} if cursor else {})}
        ms, response = await timed(lambda params=params: http.get("/v1/duplicates", params=params, headers=headers))
        data = response.raise_for_status().json()["data"]
        times.append(ms)
        groups += len(data["groups"])
        cursor = data["nextCursor"]
    times.sort()
    return {"pages": len(times), "groups": groups, "p50_ms": round(statistics.median(times), 1),
            "p99_ms": round(times[min(len(times) - 1, int(len(times) * 0.99))], 1)}  # fmt: skip


async def bench_purge(http: httpx.AsyncClient, dsn: str, count: int) -> dict[str, Any]:
    conn = await asyncpg.connect(_plain(dsn))
    try:
        await conn.execute(SEED_TRASH_SQL, datetime.now(UTC) - timedelta(days=40), count)
        await conn.execute("ANALYZE bookmarks")
    finally:
        await conn.close()
    writers = [await sign_in(http) for _ in range(4)]
    stop = asyncio.Event()
    latencies: list[float] = []

    async def write(n: int, headers: dict[str, str]) -> None:
        i = 0
        while not stop.is_set():
            path, body = f"/v1/bookmarks/w{n}-{i}", {"url": f"https://writer.example/{n}/{i}", "title": f"Write {i}"}
            ms, response = await timed(lambda path=path, body=body: http.put(path, json=body, headers=headers))
            response.raise_for_status()
            latencies.append(ms)
            i += 1

    async def window(seconds: float | None, work: Callable[[], Awaitable[Any]] | None) -> tuple[list[float], Any]:
        latencies.clear()
        stop.clear()
        tasks = [asyncio.create_task(write(n, h)) for n, (_, h) in enumerate(writers)]
        result = await work() if work is not None else await asyncio.sleep(seconds or 0)
        stop.set()
        await asyncio.gather(*tasks)
        return sorted(latencies), result

    before, _ = await window(5.0, None)
    engine = create_async_engine(dsn)
    try:
        sessions = create_session_factory(engine)
        began = time.perf_counter()
        during, purged = await window(None, lambda: purge_expired(sessions=sessions, retention=timedelta(days=30)))
        purge_s = time.perf_counter() - began
    finally:
        await engine.dispose()

    def pct(values: list[float], q: float) -> float:
        return round(values[min(len(values) - 1, int(len(values) * q))], 1) if values else 0.0

    return {"purged": purged, "purge_s": round(purge_s, 2),
            "put_before_p50_ms": pct(before, 0.5), "put_before_p99_ms": pct(before, 0.99),
            "put_during_p50_ms": pct(during, 0.5), "put_during_p99_ms": pct(during, 0.99),
            "puts_during": len(during)}  # fmt: skip


async def run(stack: Stack, args: argparse.Namespace) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=300) as http:
        owner, headers = await sign_in(http)
        await seed(stack.dsn("bookmarks"), owner, args.count)
        return {
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "count": args.count,
            "duplicates": await bench_duplicates(http, headers, args.samples),
            "bulk": await bench_bulk(http, headers),
            "restore": await bench_restore(http, headers),
            "purge": await bench_purge(http, stack.dsn("bookmarks"), args.count),
        }


def table(result: dict[str, Any]) -> str:
    bulk, restore, dup, purge = result["bulk"], result["restore"], result["duplicates"], result["purge"]
    rows = [
        ("bulk favorite by query: call", f"{bulk['affected']} bookmarks", f"{bulk['call_ms']} ms"),
        ("… and visible in delta", "", f"{bulk['visible_in_delta_ms']} ms"),
        ("undo of it", f"{bulk['undo']['restored']} restored", f"{bulk['undo_ms']} ms"),
        ("restore since (mass delete)", f"{restore['restored']} bookmarks", f"{restore['restore_ms']} ms"),
        (
            "duplicates page p50 / p99",
            f"{dup['pages']} pages, {dup['groups']} groups",
            f"{dup['p50_ms']} / {dup['p99_ms']} ms",
        ),
        ("retention purge", f"{purge['purged']} bookmarks", f"{purge['purge_s']} s"),
        ("other users' PUT p50 / p99 before", "", f"{purge['put_before_p50_ms']} / {purge['put_before_p99_ms']} ms"),
        (
            "… during the purge",
            f"{purge['puts_during']} PUTs",
            f"{purge['put_during_p50_ms']} / {purge['put_during_p99_ms']} ms",
        ),
    ]
    return "\n".join(f"{name:36} {what:>24} {value:>16}" for name, what, value in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-curation-") as data_dir:
        config = StackConfig.for_tests(
            Path(data_dir),
            output=open("/dev/null", "w"),  # noqa: SIM115, PTH123
            extra_env={"GATEWAY_RATE_LIMIT_PER_MINUTE": "0", "TRASH_PURGE_INTERVAL_SECONDS": "0"},
        )
        with Stack(config) as stack:
            result = asyncio.run(run(stack, args))
    print(table(result))
    path = write_results("curation", result)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
