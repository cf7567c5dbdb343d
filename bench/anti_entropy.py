"""Anti-entropy benchmark (docs/decisions/0131-anti-entropy.md): what comparing a 100,000-bookmark user's
projection with bookmarks costs when nothing differs, and when one record does.

    .venv/bin/python bench/anti_entropy.py [--count 100000] [--samples 20]

Starts PostgreSQL and the broker only (private data dir, free ports, migrations run), bulk-loads one user's
``--count`` bookmarks into the bookmarks database (export.py's seed) and the same records into enrichment's
``bookmark_urls``, then measures, ``--samples`` times each:

- the source digest (``bookmarks.service.url_digests`` of that user: 64 buckets) and the projection digest
  (``enrichment.store.digests.digests``), in the database;
- a whole pass (``enrichment.anti_entropy.check_bookmark_urls``) against the real bookmarks app over HTTP
  (httpx's ASGI transport, no socket), nothing different: it must re-publish nothing;
- the drill-down of one bucket on each side (what a pass adds for one differing record).

Prints a table; writes ``bench/results/anti-entropy-<timestamp>.json``.
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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
from asgi_lifespan import LifespanManager
from export import SEED_ROWS_SQL, SEED_STREAM_SQL
from result_files import write_results  # bench/ is on sys.path when this script runs
from sqlalchemy.ext.asyncio import create_async_engine

from bookmarks import service as bookmarks_service
from bookmarks.main import create_app as create_bookmarks_app
from bookmarks.settings import Settings as BookmarksSettings
from common.db import create_session_factory
from enrichment.anti_entropy import BookmarksSource, CheckConfig, InFlight, check_bookmark_urls
from enrichment.store import digests as projection

SEED_PROJECTION_SQL = """
INSERT INTO bookmark_urls (user_id, client_bookmark_id, normalized_url, deleted, position)
SELECT $1, 'seed-' || lpad(g::text, 7, '0'), 'https://site' || (g % 997) || '.example/p/' || g, false, now()
FROM generate_series(1, $2) AS g
"""


def _plain(dsn: str) -> str:
    return dsn.replace("postgresql+asyncpg://", "postgresql://")


async def seed(bookmarks_dsn: str, enrichment_dsn: str, owner: uuid.UUID, count: int) -> None:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    conn = await asyncpg.connect(_plain(bookmarks_dsn))
    try:
        await conn.execute(SEED_STREAM_SQL, owner, base, count)
        await conn.execute(SEED_ROWS_SQL, owner, base, count)
        await conn.execute("ANALYZE bookmarks")
    finally:
        await conn.close()
    conn = await asyncpg.connect(_plain(enrichment_dsn))
    try:
        await conn.execute(SEED_PROJECTION_SQL, owner, count)
        await conn.execute("ANALYZE bookmark_urls")
    finally:
        await conn.close()


async def timed(samples: int, call: Callable[[], Awaitable[Any]]) -> dict[str, float]:
    """Median and max wall time of ``call`` in ms, after one warm-up call."""
    await call()
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        await call()
        times.append((time.perf_counter() - started) * 1000)
    return {"p50_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1)}


async def measure(stack: Any, owner: uuid.UUID, samples: int) -> dict[str, Any]:
    bookmarks_dsn, enrichment_dsn = stack.dsn("bookmarks"), stack.dsn("enrichment")
    source_sessions = create_session_factory(create_async_engine(bookmarks_dsn))
    projection_sessions = create_session_factory(create_async_engine(enrichment_dsn))

    async def source_digest() -> Any:
        return await bookmarks_service.url_digests(sessions=source_sessions, after=None, limit=1)

    async def projection_digest() -> Any:
        async with projection_sessions() as session:
            return await projection.digests(session, [owner])

    page = await source_digest()
    bucket = next(iter(page.users[0].buckets))

    async def source_drill() -> Any:
        return await bookmarks_service.url_records(
            sessions=source_sessions, owner=owner, buckets=[bucket], settle_seconds=300
        )

    async def projection_drill() -> Any:
        async with projection_sessions() as session:
            return await projection.record_hashes(session, owner, [bucket])

    app = create_bookmarks_app(
        BookmarksSettings(database_url=bookmarks_dsn, kafka_bootstrap_servers=stack.kafka_bootstrap)
    )
    async with LifespanManager(app, startup_timeout=120):
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bookmarks", timeout=60)
        source = BookmarksSource(bookmarks_url="http://bookmarks", timeout_seconds=60, http=http)
        repaired: list[int] = []

        async def whole_pass() -> None:
            repaired.append(
                await check_bookmark_urls(
                    sessions=projection_sessions, source=source, config=CheckConfig(), in_flight=InFlight(300)
                )
            )

        results = {
            "source_digest": await timed(samples, source_digest),
            "projection_digest": await timed(samples, projection_digest),
            "whole_pass_nothing_different": await timed(samples, whole_pass),
            "source_drill_one_bucket": await timed(samples, source_drill),
            "projection_drill_one_bucket": await timed(samples, projection_drill),
        }
        await http.aclose()
    assert set(repaired) == {0}, f"an intact projection re-published records: {repaired}"
    results["digest_json_bytes"] = len(page.model_dump_json())
    results["records_in_one_bucket"] = page.users[0].buckets[bucket][0]
    return results


def print_table(count: int, results: dict[str, Any]) -> None:
    print(f"\nanti-entropy, one user with {count:,} live bookmarks, nothing different unless said")
    print(f"{'what':<44}{'p50 ms':>10}{'max ms':>10}")
    for name, figures in results.items():
        if isinstance(figures, dict):
            print(f"{name:<44}{figures['p50_ms']:>10}{figures['max_ms']:>10}")
    size, bucket = results["digest_json_bytes"], results["records_in_one_bucket"]
    print(f"digest answer: {size:,} bytes; one bucket: {bucket:,} records")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()

    from devstack.stack import Stack, StackConfig

    owner = uuid.uuid4()
    with tempfile.TemporaryDirectory(prefix="bench-anti-entropy-") as data_dir:
        config = StackConfig.for_tests(
            Path(data_dir),
            services=False,
            output=open(Path(data_dir) / "stack.log", "w"),  # noqa: SIM115 - lives as long as the stack
        )
        print("bench: starting PostgreSQL and the broker …", flush=True)
        with Stack(config) as stack:
            print(f"bench: loading {args.count:,} bookmarks on both sides …", flush=True)
            asyncio.run(seed(stack.dsn("bookmarks"), stack.dsn("enrichment"), owner, args.count))
            results = asyncio.run(measure(stack, owner, args.samples))
    report = {
        "bookmarks": args.count,
        "samples": args.samples,
        "cpus": psutil.cpu_count(),
        "load_avg": list(psutil.getloadavg()),
        "at": datetime.now(UTC).isoformat(),
        "results": results,
    }
    print_table(args.count, results)
    path = write_results("anti-entropy", report)
    print(f"results written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
