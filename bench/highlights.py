"""Highlights benchmark (docs/api-guide.md, section 16): re-anchoring after a page's text changed, and a
delta page of 1,000 highlights.

    .venv/bin/python bench/highlights.py [--samples 30]

Starts its own stack (private data dir, free ports, no per-user rate limit) and signs a user in through
the gateway. Then:

  anchor       the anchoring rule alone (bookmarks.highlights.anchoring.anchor_all), in this process: 200
               highlights of a 100 KB page after an edit that shifts every one, rewords one in four
               (fuzzy) and deletes one in ten (orphan): p50 / p99 per call
  re-anchor    the same 200 highlights re-anchored by the service's own step (store the new text, find
               them, write those that moved at new positions), each sample one transaction against the
               stack's bookmarks database: p50 / p99
  delta page   GET /v1/bookmarks/delta?limit=1000 through the gateway for a user with 1,000 highlights
               (and nothing else after the cursor): p50 / p99, and CPU ms per page of each process
  export       GET /v1/exports?format=markdown (and annotations) through the gateway for a user with
               50,000 highlights on 500 bookmarks (loaded straight into the database): the time to the
               last byte, and the bookmarks process's peak resident memory above its level before

Prints a table; writes ``bench/results/highlights-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from result_files import write_results  # bench/ is on sys.path when this script runs
from run import cpu_ms_per_op, stack_cpu_seconds  # bench/ is on sys.path when this script runs
from sqlalchemy.ext.asyncio import create_async_engine

from bookmarks.highlights.anchoring import Selector, anchor_all
from bookmarks.highlights.service import store_page_text
from common.db import create_session_factory
from devstack.stack import Stack, StackConfig

WORDS = (
    "tide pool anemone crab rock water shell kelp urchin starfish wave sand shore gull salt moon current "
    "barnacle limpet mussel heron drift foam reef cove harbor lantern map compass rope sail"
).split()


def page(seed: int, size: int = 100_000) -> str:
    rng = random.Random(seed)
    sentences: list[str] = []
    length = 0
    while length < size:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))).capitalize() + "."
        sentences.append(sentence)
        length += len(sentence) + 1
    return " ".join(sentences)


def selectors(text: str, count: int = 200) -> list[Selector]:
    step = len(text) // count
    chosen = []
    for i in range(count):
        start = text.index(" ", i * step) + 1
        end = text.index(" ", start + 40)
        chosen.append(Selector(text[start:end], text[max(0, start - 32) : start], text[end : end + 32], start, end))
    return chosen


def edited(text: str, marks: list[Selector]) -> str:
    """A new opening paragraph (every offset shifts), one quote in four reworded a little, one in ten gone."""
    changed = text
    for i, mark in enumerate(marks):
        if i % 10 == 0:
            changed = changed.replace(mark.quote, "", 1)
        elif i % 4 == 0:
            changed = changed.replace(mark.quote, mark.quote[:10] + "XY" + mark.quote[12:], 1)
    return "An opening paragraph the page did not have before. " * 20 + changed


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def bench_anchor(samples: int) -> dict[str, Any]:
    text = page(1)
    marks = selectors(text)
    after = edited(text, marks)
    times = []
    for _ in range(samples):
        began = time.perf_counter()
        found = anchor_all(after, marks)
        times.append((time.perf_counter() - began) * 1000)
    kinds = {kind: sum(1 for a in found if a.kind == kind) for kind in ("exact", "fuzzy", "orphan")}
    return {
        "highlights": len(marks),
        "page_chars": len(after),
        "kinds": kinds,
        "p50_ms": pct(times, 0.5),
        "p99_ms": pct(times, 0.99),
    }


async def sign_in(http: httpx.AsyncClient) -> tuple[uuid.UUID, dict[str, str]]:
    session = (await http.post("/v1/auth/anonymous")).raise_for_status().json()
    return uuid.UUID(session["user"]["id"]), {"Authorization": f"Bearer {session['accessToken']}"}


async def bench_reanchor(http: httpx.AsyncClient, dsn: str, samples: int) -> dict[str, Any]:
    owner, headers = await sign_in(http)
    text = page(2)
    marks = selectors(text)
    (
        await http.put("/v1/bookmarks/page", json={"url": "https://pools.example/long"}, headers=headers)
    ).raise_for_status()
    for i, mark in enumerate(marks):
        body = {"bookmarkId": "page", "quote": mark.quote, "prefix": mark.prefix, "suffix": mark.suffix,
                "start": mark.start, "end": mark.end}  # fmt: skip
        (await http.put(f"/v1/highlights/h{i:03}", json=body, headers=headers)).raise_for_status()
    engine = create_async_engine(dsn)
    sessions = create_session_factory(engine)
    versions = [text, edited(text, marks)]
    times = []
    try:
        for i in range(samples):
            async with sessions() as session, session.begin():
                began = time.perf_counter()
                await store_page_text(session, owner, "page", versions[i % 2])
            times.append((time.perf_counter() - began) * 1000)
    finally:
        await engine.dispose()
    return {"highlights": len(marks), "p50_ms": pct(times, 0.5), "p99_ms": pct(times, 0.99)}


async def bench_delta(http: httpx.AsyncClient, samples: int) -> dict[str, Any]:
    _, headers = await sign_in(http)
    for b in range(10):
        (
            await http.put(f"/v1/bookmarks/b{b}", json={"url": f"https://pools.example/{b}"}, headers=headers)
        ).raise_for_status()
    cursor_data = (await http.get("/v1/bookmarks/delta", params={"limit": "1000"}, headers=headers)).json()["data"]
    assert cursor_data["nextCursor"] is None
    text = page(3, 20_000)
    marks = selectors(text, 100)
    for i in range(1000):
        mark = marks[i % 100]
        body = {"bookmarkId": f"b{i % 10}", "quote": mark.quote, "prefix": mark.prefix, "suffix": mark.suffix,
                "note": f"Note {i}: " + mark.quote[:30]}  # fmt: skip
        (await http.put(f"/v1/highlights/h{i:04}", json=body, headers=headers)).raise_for_status()
    # The page after the bookmarks: exactly the 1,000 highlights.
    first = (await http.get("/v1/bookmarks/delta", params={"limit": "10"}, headers=headers)).json()["data"]
    params = {"limit": "1000", "cursor": first["nextCursor"]}
    times = []
    before = stack_cpu_seconds()
    for _ in range(samples):
        began = time.perf_counter()
        response = await http.get("/v1/bookmarks/delta", params=params, headers=headers)
        data = response.raise_for_status().json()["data"]
        times.append((time.perf_counter() - began) * 1000)
        assert len(data["highlights"]) == 1000, len(data["highlights"])
    cpu = cpu_ms_per_op(before, stack_cpu_seconds(), samples)
    return {
        "highlights": 1000,
        "bytes": len(response.content),
        "p50_ms": pct(times, 0.5),
        "p99_ms": pct(times, 0.99),
        **cpu,
    }


SEED_BOOKMARKS_SQL = """
INSERT INTO bookmarks (owner_uid, client_bookmark_id, url, normalized_url, domain, title, created_at, updated_at,
                       enrichment_status, snapshot_status)
SELECT $1, 'bm-' || g, 'https://pools.example/' || g, 'https://pools.example/' || g, 'pools.example',
       'Page ' || g, now(), now() + g * interval '1 microsecond', 'completed', 'ready'
FROM generate_series(1, 500) AS g
"""
SEED_HIGHLIGHTS_SQL = """
INSERT INTO highlights (owner_uid, highlight_id, client_bookmark_id, quote, prefix, suffix, color, note, created_at,
                        updated_at)
SELECT $1, 'h-' || g, 'bm-' || (g % 500 + 1), 'A passage worth keeping, number ' || g || ', about tide pools',
       'before it ', ' and after', 'yellow', CASE WHEN g % 3 = 0 THEN 'Why it matters: ' || g ELSE '' END,
       now(), now() + (1000 + g) * interval '1 microsecond'
FROM generate_series(1, 50000) AS g
"""


def _bookmarks_rss() -> int:
    import psutil

    for proc in psutil.Process().children(recursive=True):
        try:
            if "-m bookmarks" in " ".join(proc.cmdline()):
                return int(proc.memory_info().rss)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return 0


async def bench_export(http: httpx.AsyncClient, dsn: str) -> dict[str, Any]:
    owner, headers = await sign_in(http)
    conn = await asyncpg.connect(dsn.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await conn.execute(SEED_BOOKMARKS_SQL, owner)
        await conn.execute(SEED_HIGHLIGHTS_SQL, owner)
        # What a highlight write keeps in its bookmark's search row (the exports pick bookmarks by it).
        await conn.execute("UPDATE bookmarks SET search_highlight_texts = ARRAY['passage'] WHERE owner_uid = $1", owner)
        await conn.execute("ANALYZE highlights")
    finally:
        await conn.close()
    results: dict[str, Any] = {"highlights": 50_000, "bookmarks": 500}
    for fmt in ("markdown", "annotations"):
        base = peak = _bookmarks_rss()
        size = 0
        began = time.perf_counter()
        async with http.stream("GET", "/v1/exports", params={"format": fmt}, headers=headers) as response:
            response.raise_for_status()
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                peak = max(peak, _bookmarks_rss())
        results[fmt] = {"seconds": round(time.perf_counter() - began, 2), "mib": round(size / 2**20, 1),
                        "peak_rss_above_mib": round((peak - base) / 2**20, 1)}  # fmt: skip
    return results


async def run(stack: Stack, args: argparse.Namespace) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=120) as http:
        return {
            "anchor": bench_anchor(args.samples),
            "reanchor": await bench_reanchor(http, stack.dsn("bookmarks"), args.samples),
            "delta": await bench_delta(http, args.samples),
            "export": await bench_export(http, stack.dsn("bookmarks")),
        }


def table(result: dict[str, Any]) -> str:
    anchor, reanchor, delta = result["anchor"], result["reanchor"], result["delta"]
    kinds = ", ".join(f"{n} {k}" for k, n in anchor["kinds"].items())
    rows = [
        ("anchoring rule, 200 on a 100 KB page", kinds, f"{anchor['p50_ms']} / {anchor['p99_ms']} ms"),
        (
            "re-anchor in a transaction",
            f"{reanchor['highlights']} highlights",
            f"{reanchor['p50_ms']} / {reanchor['p99_ms']} ms",
        ),
        (
            "delta page of 1,000 highlights",
            f"{delta['bytes'] // 1024} KiB",
            f"{delta['p50_ms']} / {delta['p99_ms']} ms",
        ),
        ("… CPU per page (stack)", "", f"{delta['cpu_ms_per_op_total']} ms"),
    ]
    rows += [(f"    {part}", "", f"{value} ms") for part, value in delta["cpu_ms_per_op"].items()]
    for fmt in ("markdown", "annotations"):
        done = result["export"][fmt]
        rows.append((f"export, {fmt}, 50,000 highlights", f"{done['mib']} MiB, +{done['peak_rss_above_mib']} MiB RSS",
                     f"{done['seconds']} s"))  # fmt: skip
    return "\n".join(f"{name:40} {what:>28} {value:>18}" for name, what, value in [("", "", "p50 / p99"), *rows])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-highlights-") as data_dir:
        config = StackConfig.for_tests(
            Path(data_dir),
            output=open("/dev/null", "w"),  # noqa: SIM115, PTH123
            extra_env={"GATEWAY_RATE_LIMIT_PER_MINUTE": "0"},
        )
        with Stack(config) as stack:
            result = asyncio.run(run(stack, args))
    print(table(result))
    path = write_results("highlights", result)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
