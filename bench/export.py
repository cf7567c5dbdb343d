"""Export benchmark (docs/api-guide.md, section 13): GET /v1/exports of a big library, per format.

``.venv/bin/python bench/export.py [--count 100000] [--highlights 1] [--formats …] [--rounds 1]``: starts
its own stack (private data dir, free ports), bulk-loads ``--count`` bookmarks (in 30 collections, nested,
with user tags and notes), each with ``--highlights`` live highlights (a third of them with a note),
straight into the bookmarks database, then downloads the export through the gateway once per format and
round (all five by default: ``markdown`` and ``annotations`` hold the bookmarks with highlights or notes,
so with ``--highlights 1`` every one); each format's median round is reported.
Reported per format: seconds to the last byte, bytes, chunks received, CPU seconds of each process of
the stack and of this load generator (``bench/run.py``'s ``stack_cpu_seconds``), and the bookmarks process's
resident memory (RSS, sampled every 20 ms) before and at its peak during the export. Prints a table and
writes ``bench/results/export-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
from result_files import write_results  # bench/ is on sys.path when this script runs
from run import stack_cpu_seconds

SEED_STREAM_SQL = """
INSERT INTO user_streams (owner_uid, last_position)
VALUES ($1, $2::timestamptz + ($3::int + 100) * interval '1 microsecond')
ON CONFLICT (owner_uid) DO UPDATE SET last_position = EXCLUDED.last_position;
"""
# 30 collections: 10 top-level ones, each with a child, each child with a child.
SEED_COLLECTIONS_SQL = """
INSERT INTO collections (owner_uid, collection_id, name, parent_id, created_at, updated_at)
SELECT $1, 'c' || g, 'Folder ' || g || CASE WHEN g % 3 = 0 THEN ' & more' ELSE '' END,
       CASE WHEN g % 3 = 0 THEN NULL ELSE 'c' || (g - 1) END,
       $2::timestamptz + g * interval '1 microsecond', $2::timestamptz + g * interval '1 microsecond'
FROM generate_series(0, 29) AS g
"""
SEED_ROWS_SQL = """
INSERT INTO bookmarks (owner_uid, client_bookmark_id, url, normalized_url, domain, title, description, tags,
                       user_tags, collection_ids, notes, is_favorite, is_archived, created_at, updated_at,
                       enrichment_status, snapshot_status)
SELECT $1, 'seed-' || lpad(g::text, 7, '0'), 'https://site' || (g % 997) || '.example/p/' || g,
       'https://site' || (g % 997) || '.example/p/' || g, 'site' || (g % 997) || '.example',
       'Seeded bookmark "number" ' || g, 'A description long enough to look like a real page summary ' || g,
       ARRAY['tag' || (g % 13), 'seed'], ARRAY['mine' || (g % 7), 'export'],
       CASE WHEN g % 4 = 0 THEN ARRAY[]::text[] ELSE ARRAY['c' || (g % 30), 'c' || ((g + 1) % 30)] END,
       CASE WHEN g % 10 = 0 THEN 'a note, with a comma' END, g % 5 = 0, g % 3 = 0,
       $2::timestamptz + (100 + g) * interval '1 microsecond', $2::timestamptz + (100 + g) * interval '1 microsecond',
       'completed', 'ready'
FROM generate_series(1, $3) AS g
"""
# ``$3`` highlights on each of the first ``$2`` seeded bookmarks, oldest first within a bookmark; what a
# highlight write keeps on its bookmark's search row (the annotated exports pick bookmarks by it) too.
SEED_HIGHLIGHTS_SQL = """
INSERT INTO highlights (owner_uid, highlight_id, client_bookmark_id, quote, prefix, suffix, color, note, created_at,
                        updated_at)
SELECT $1, 'h-' || g || '-' || k, 'seed-' || lpad(g::text, 7, '0'),
       'A passage worth keeping, number ' || g || ', about tide pools', 'before it ', ' and after', 'yellow',
       CASE WHEN g % 3 = 0 THEN 'Why it matters: ' || g ELSE '' END,
       $4::timestamptz + g * interval '1 microsecond',
       $4::timestamptz + ($2 * 2 + g * $3 + k) * interval '1 microsecond'
FROM generate_series(1, $2) AS g, generate_series(1, $3) AS k
"""
MARK_HIGHLIGHTED_SQL = "UPDATE bookmarks SET search_highlight_texts = ARRAY['passage'] WHERE owner_uid = $1"
FORMATS = ("json", "csv", "netscape", "markdown", "annotations")


class RssSampler:
    """Peak resident memory of one process (and its children), sampled on a thread."""

    def __init__(self, pid: int, interval: float = 0.02) -> None:
        self.process, self.interval = psutil.Process(pid), interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> int:
        procs = [self.process, *self.process.children(recursive=True)]
        return sum(p.memory_info().rss for p in procs if p.is_running())

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.rss())
            time.sleep(self.interval)

    def __enter__(self) -> RssSampler:
        self.peak = self.rss()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def seed(dsn: str, owner: uuid.UUID, count: int, highlights: int) -> None:
    conn = await asyncpg.connect(dsn.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        base = datetime(2026, 1, 1, tzinfo=UTC)
        await conn.execute(SEED_STREAM_SQL, owner, base, count * (2 + highlights))
        await conn.execute(SEED_COLLECTIONS_SQL, owner, base)
        await conn.execute(SEED_ROWS_SQL, owner, base, count)
        if highlights:
            await conn.execute(SEED_HIGHLIGHTS_SQL, owner, count, highlights, base)
            await conn.execute(MARK_HIGHLIGHTED_SQL, owner)
        await conn.execute("ANALYZE bookmarks")
        await conn.execute("ANALYZE highlights")
    finally:
        await conn.close()


async def export_once(http: httpx.AsyncClient, headers: dict[str, str], fmt: str, pid: int) -> dict[str, Any]:
    cpu_before = stack_cpu_seconds()
    with RssSampler(pid) as sampler:
        before = sampler.peak
        size = chunks = 0
        started = time.perf_counter()
        async with http.stream("GET", "/v1/exports", params={"format": fmt}, headers=headers) as response:
            response.raise_for_status()
            async for chunk in response.aiter_raw():
                size += len(chunk)
                chunks += 1
        seconds = time.perf_counter() - started
    cpu_after = stack_cpu_seconds()
    cpu = {part: round(cpu_after[part] - cpu_before.get(part, 0.0), 2) for part in sorted(cpu_after)}
    return {
        "cpu_seconds": {part: used for part, used in cpu.items() if used >= 0.01},
        "seconds": round(seconds, 2),
        "bytes": size,
        "chunks": chunks,
        "rss_before_mib": round(before / 2**20, 1),
        "rss_peak_mib": round(sampler.peak / 2**20, 1),
        "rss_growth_mib": round((sampler.peak - before) / 2**20, 1),
    }


async def run(
    gateway_url: str, dsn: str, pid: int, count: int, highlights: int, formats: list[str], rounds: int
) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=120) as http:
        session = (await http.post("/v1/auth/anonymous")).raise_for_status().json()
        headers = {"Authorization": f"Bearer {session['accessToken']}"}
        print(f"bench: loading {count:,} bookmarks with {highlights} highlight(s) each …", flush=True)
        await seed(dsn, uuid.UUID(session["user"]["id"]), count, highlights)
        results: dict[str, list[dict[str, Any]]] = {}
        for round_ in range(rounds):
            for fmt in formats:
                print(f"bench: export {fmt} (round {round_ + 1}) …", flush=True)
                results.setdefault(fmt, []).append(await export_once(http, headers, fmt, pid))
        return {fmt: _median_round(runs) for fmt, runs in results.items()}


def _median_round(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The round with the median time, with every round's time beside it."""
    median = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
    return {**median, "rounds_seconds": [r["seconds"] for r in runs]}


def print_table(report: dict[str, Any]) -> None:
    print(f"\n{report['bookmarks']:,} bookmarks, {report['highlights_per_bookmark']} highlight(s) each, "
          f"load average {report['load_avg'][0]:.1f}")  # fmt: skip
    print(f"{'format':<12} {'last byte':>10} {'MiB':>8} {'chunks':>7} {'RSS before':>11} {'RSS growth':>11}  rounds")
    for fmt, r in report["formats"].items():
        print(f"{fmt:<12} {r['seconds']:>9.2f}s {r['bytes'] / 2**20:>8.1f} {r['chunks']:>7} "
              f"{r['rss_before_mib']:>8.1f} MiB {r['rss_growth_mib']:>7.1f} MiB  {r['rounds_seconds']}")  # fmt: skip
        print(f"{'':<12} CPU seconds: {r['cpu_seconds']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--highlights", type=int, default=1, help="live highlights per bookmark (0: none)")
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS), help="in this order")
    parser.add_argument("--rounds", type=int, default=1, help="each format this many times; the median is shown")
    args = parser.parse_args()

    from devstack.stack import Stack, StackConfig

    with tempfile.TemporaryDirectory(prefix="bench-export-") as data_dir:
        config = StackConfig.for_tests(
            Path(data_dir),
            extra_env={"ENRICHMENT_BROWSER": "off", "LOG_LEVEL": "WARNING"},
            output=open(Path(data_dir) / "stack.log", "w"),  # noqa: SIM115 - lives as long as the stack
        )
        print("bench: starting the stack …", flush=True)
        with Stack(config) as stack:
            pid = stack.service_processes["bookmarks"].pid
            results = asyncio.run(
                run(
                    stack.gateway_url,
                    stack.dsn("bookmarks"),
                    pid,
                    args.count,
                    args.highlights,
                    args.formats,
                    args.rounds,
                )
            )
    report = {
        "bookmarks": args.count,
        "highlights_per_bookmark": args.highlights,
        "cpus": psutil.cpu_count(),
        "load_avg": list(psutil.getloadavg()),
        "at": datetime.now(UTC).isoformat(),
        "formats": results,
    }
    path = write_results("export", report)
    print_table(report)
    print(f"results written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
