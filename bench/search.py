"""Search benchmark: query latency through the gateway at 10,000 and 100,000 bookmarks.

    .venv/bin/python bench/search.py [--sizes 10000 100000] [--samples 200]

Starts its own stack (private data dir, free ports). One user's library is bulk-loaded straight into the
bookmarks database through the service's own write statement (``repository.put_bookmark`` with the page
text, i.e. the same index-building SQL as a PUT plus an applied enrichment), not through 100k HTTP calls: the
first ``--seed`` (2,000) bookmarks one statement each, the rest as SQL copies of those rows (new ids,
dates shifted), search columns included (building 100k indexes one statement at a time takes over an
hour on this loaded machine).
Each bookmark gets a title, tags, and ~2.5 KB of page text in English, French, German or Spanish (a
quarter each) built from sentence pools with a long-tailed vocabulary, so some words are in most
pages and others in few.

Measured per library size, every query through the gateway (``GET /v1/bookmarks/search``, limit 20):
one-word (a common, a medium and a rare word), three-word, phrase, and filter-only queries: p50/p99;
the index size per bookmark (the GIN indexes and the search columns); and the write-path cost of the
index: the same upsert statement with and without the search columns (own fields only, as a PUT writes
them), against the p50 of a PUT through the gateway.
Writes ``bench/results/search-<timestamp>.json`` and ``bench/results/search-latest.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa
from result_files import write_results  # bench/ is on sys.path when this script runs
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine

from bookmarks.domain.model import Bookmark
from bookmarks.search.index import SEARCH_INDEX
from bookmarks.store import repository
from bookmarks.store.rows import PageText, install_index
from bookmarks.store.tables import bookmarks

ADMIN_TOKEN = "bench-admin-token"  # noqa: S105 - a local, throwaway stack
BATCH = 250

install_index(SEARCH_INDEX)  # the bookmark row's statements write search's columns (as bookmarks.main does)

SENTENCES = {
    "en": [
        "The city council approved a new budget for public transport and cycling lanes.",
        "Researchers found that regular exercise improves memory in older adults.",
        "This recipe uses fresh tomatoes, garlic and basil from the garden.",
        "The company reported strong growth in cloud computing revenue this quarter.",
        "Climate change is affecting rainfall patterns across the region.",
        "A practical guide to writing maintainable Python code with type hints.",
        "The museum opens a new exhibition about ancient navigation techniques.",
        "Engineers tested the bridge under heavy load before opening it to traffic.",
        "Investors are watching interest rates and inflation data closely.",
        "The documentary follows a family of farmers through a difficult harvest.",
    ],
    "fr": [
        "Les politiques économiques de la France sont débattues au Parlement.",
        "Les élèves étudient l'histoire de la navigation et des grandes découvertes.",
        "Cette recette utilise des tomates fraîches, de l'ail et du basilic.",
        "La ville a approuvé un nouveau budget pour les transports publics.",
        "Les chercheurs ont montré que l'exercice améliore la mémoire.",
        "Le changement climatique modifie les précipitations dans la région.",
        "L'entreprise annonce une forte croissance de ses revenus cette année.",
        "Le musée présente une exposition sur les techniques anciennes.",
    ],
    "de": [
        "Die Häuser und Straßen von Berlin wurden nach dem Krieg wieder aufgebaut.",
        "Forscher haben gezeigt, dass Bewegung das Gedächtnis verbessert.",
        "Die Stadt hat einen neuen Haushalt für den öffentlichen Verkehr beschlossen.",
        "Der Klimawandel verändert die Niederschläge in der Region.",
        "Das Unternehmen meldet ein starkes Wachstum im Cloud-Geschäft.",
        "Dieses Rezept verwendet frische Tomaten, Knoblauch und Basilikum.",
        "Das Museum eröffnet eine Ausstellung über alte Navigationstechniken.",
    ],
    "es": [
        "El ayuntamiento aprobó un nuevo presupuesto para el transporte público.",
        "Los investigadores descubrieron que el ejercicio mejora la memoria.",
        "Esta receta usa tomates frescos, ajo y albahaca del huerto.",
        "El cambio climático está afectando las lluvias en la región.",
        "La empresa informó un fuerte crecimiento de sus ingresos este año.",
        "El museo abre una nueva exposición sobre técnicas de navegación antiguas.",
    ],
}
RARE_WORDS = [f"zyx{i:05d}" for i in range(5000)]  # each in a handful of pages
TAGS = ["news", "python", "recipes", "travel", "science", "finance", "reading", "climate", "history", "tools"]
QUERIES = {
    "one_word_common": "budget",
    "one_word_medium": "navigation",
    "one_word_rare": "zyx00042",
    "three_words": "climate region rainfall",
    "phrase": '"public transport"',
    "filter_only": "tag:python -is:archived",
}


def page_text(rng: random.Random, language: str) -> str:
    pool = SENTENCES[language]
    words = [rng.choice(pool) for _ in range(34)]
    words.insert(rng.randrange(len(words)), f"Reference {rng.choice(RARE_WORDS)}.")
    return " ".join(words)


def make_record(owner: uuid.UUID, index: int, rng: random.Random, base: datetime) -> tuple[Bookmark, PageText]:
    language = ("en", "fr", "de", "es")[index % 4]
    saved = base + timedelta(minutes=index)
    record = Bookmark(
        owner_uid=owner,
        client_bookmark_id=f"b{index:06d}",
        url=f"https://site{index % 500}.example/articles/{index}",
        normalized_url=f"https://site{index % 500}.example/articles/{index}",
        domain=f"site{index % 500}.example",
        created_at=saved,
        updated_at=saved,
        title=f"{rng.choice(SENTENCES[language])[:60]} #{index}",
        summary=rng.choice(SENTENCES[language]),
        tags=tuple(rng.sample(TAGS, 2)),
        user_tags=(rng.choice(TAGS),),
        enrichment_status="completed",
        snapshot_status="ready",
        is_archived=index % 10 == 0,
        client_saved_at=saved,
        enriched_at=saved,
    )
    return record, PageText(page_text(rng, language), language)


async def load(engine: AsyncEngine, owner: uuid.UUID, start: int, stop: int, base: datetime) -> float:
    """Insert bookmarks ``start..stop`` through ``put_bookmark`` (2 connections); returns seconds."""
    began = time.perf_counter()
    async with engine.begin() as conn:  # the user's stream row, as any write through the service makes it
        await repository.allocate_positions(AsyncSession(bind=conn), owner)

    async def worker(first: int) -> None:
        rng = random.Random(first)
        for batch in range(first, stop, 2 * BATCH):
            async with engine.begin() as conn:
                session = AsyncSession(bind=conn)
                for index in range(batch, min(batch + BATCH, stop)):
                    record, page = make_record(owner, index, rng, base)
                    await repository.put_bookmark(session, record, page)

    await asyncio.gather(worker(start), worker(start + BATCH))
    return time.perf_counter() - began


async def replicate(engine: AsyncEngine, owner: uuid.UUID, seed: int, first_copy: int, last_copy: int) -> float:
    """Copies ``first_copy..last_copy`` of the ``seed`` bookmarks built by :func:`load` (new ids, older
    dates), search columns included as ``put_bookmark`` built them: 100k rows without 100k index builds."""
    began = time.perf_counter()
    k = sa.func.generate_series(first_copy, last_copy).table_valued("k").render_derived(name="g")
    shift = sa.func.make_interval(0, 0, 0, k.c.k)
    columns: list[Any] = []
    for column in bookmarks.columns:
        if column.name == "client_bookmark_id":
            columns.append(column + "-" + sa.cast(k.c.k, sa.Text))
        elif column.name in ("created_at", "updated_at", "client_saved_at", "enriched_at"):
            columns.append(column - shift)
        else:
            columns.append(column)
    source = (
        sa.select(*columns)
        .select_from(bookmarks.join(k, sa.true()))
        .where(bookmarks.c.owner_uid == owner, bookmarks.c.client_bookmark_id.like("b%"))
        .where(bookmarks.c.client_bookmark_id.not_like("%-%"))
    )
    async with engine.begin() as conn:
        await conn.execute(insert(bookmarks).from_select([c.name for c in bookmarks.columns], source))
    del seed
    return time.perf_counter() - began


async def analyze(dsn: str) -> None:
    engine = create_async_engine(dsn, isolation_level="AUTOCOMMIT")
    async with engine.connect() as conn:
        await conn.exec_driver_sql("VACUUM ANALYZE bookmarks")
    await engine.dispose()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


async def measure(http: httpx.AsyncClient, headers: dict[str, str], samples: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, q in QUERIES.items():
        await http.get("/v1/bookmarks/search", params={"q": q}, headers=headers)  # warm-up
        times = []
        count = 0
        for _ in range(samples):
            t0 = time.perf_counter()
            response = await http.get("/v1/bookmarks/search", params={"q": q}, headers=headers)
            times.append(time.perf_counter() - t0)
            response.raise_for_status()
            count = len(response.json()["data"]["results"])
        out[kind] = {"q": q, "results": count, "p50_ms": round(pct(times, 50) * 1000, 1),
                     "p99_ms": round(pct(times, 99) * 1000, 1), "max_ms": round(max(times) * 1000, 1)}  # fmt: skip
    return out


async def index_size(engine: AsyncEngine, owner: uuid.UUID) -> dict[str, Any]:
    async with engine.connect() as conn:
        rows = (await conn.exec_driver_sql("SELECT count(*) FROM bookmarks")).scalar_one()
        gin = (await conn.exec_driver_sql(
            "SELECT sum(pg_relation_size(c.oid)) FROM pg_class c WHERE c.relname IN "
            "('ix_bookmarks_search', 'ix_bookmarks_search_head', 'ix_bookmarks_search_tags', "
            "'ix_bookmarks_search_newest')")).scalar_one()  # fmt: skip
        columns = (
            await conn.exec_driver_sql(
                "SELECT avg(pg_column_size(search_vector) + pg_column_size(search_head) "
                "+ pg_column_size(search_page_vector) + pg_column_size(search_tags)) FROM bookmarks"
            )
        ).scalar_one()
        text = (await conn.exec_driver_sql("SELECT avg(pg_column_size(search_page_text)) FROM bookmarks")).scalar_one()
    return {"indexes_bytes_per_bookmark": round(gin / rows), "columns_bytes_per_bookmark": round(float(columns)),
            "page_text_bytes_per_bookmark": round(float(text))}  # fmt: skip


async def write_cost(engine: AsyncEngine, owner: uuid.UUID, samples: int) -> dict[str, Any]:
    """The same upsert with and without the search columns, own fields only (what a PUT writes)."""
    rng = random.Random(7)
    base = datetime(2020, 1, 1, tzinfo=UTC)
    plain, indexed = [], []
    async with engine.connect() as conn:
        session = AsyncSession(bind=conn)
        for i in range(samples):
            record, _ = make_record(owner, 900_000 + i, rng, base)
            record = replace(record, notes="Personal notes about why this page matters to me.")
            values = record.to_row()
            statement = insert(bookmarks).values(values)
            statement = statement.on_conflict_do_update(
                index_elements=["owner_uid", "client_bookmark_id"],
                set_={k: statement.excluded[k] for k in values if k not in ("owner_uid", "client_bookmark_id")},
            )
            t0 = time.perf_counter()
            await session.execute(statement)
            await session.commit()
            plain.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            other = replace(record, client_bookmark_id=record.client_bookmark_id + "-indexed")
            await repository.put_bookmark(session, other)  # also a new row, like the plain one
            await session.commit()
            indexed.append(time.perf_counter() - t0)
    return {
        "upsert_p50_ms": round(pct(plain, 50) * 1000, 2),
        "upsert_with_index_p50_ms": round(pct(indexed, 50) * 1000, 2),
    }


async def put_latency(http: httpx.AsyncClient, headers: dict[str, str], samples: int) -> float:
    times = []
    for i in range(samples):
        body = {"url": f"https://put.example/{i}", "title": f"A page about search number {i}",
                "notes": "Personal notes about why this page matters to me."}  # fmt: skip
        t0 = time.perf_counter()
        (await http.put(f"/v1/bookmarks/put{i}", json=body, headers=headers)).raise_for_status()
        times.append(time.perf_counter() - t0)
    return round(pct(times, 50) * 1000, 2)


async def run(gateway_url: str, dsn: str, sizes: list[int], samples: int, seed: int) -> dict[str, Any]:
    engine = create_async_engine(dsn, pool_size=4)
    results: dict[str, Any] = {"sizes": {}}
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as http:
        session = (await http.post("/v1/auth/anonymous")).raise_for_status().json()
        headers = {"Authorization": f"Bearer {session['accessToken']}"}
        owner = uuid.UUID(session["user"]["id"])
        base = datetime(2020, 1, 1, tzinfo=UTC)
        loaded = 0
        for size in sizes:
            print(f"search bench: loading {loaded:,} → {size:,} bookmarks …", flush=True)
            if loaded == 0:
                seconds = await load(engine, owner, 0, min(seed, size), base)
                loaded = min(seed, size)
                results["seed_load_rows_per_s"] = round(loaded / seconds, 1)
            if size > loaded:
                seconds = await replicate(engine, owner, seed, loaded // seed, size // seed - 1)
            loaded = size
            await analyze(dsn)
            print(f"search bench: loaded in {seconds:.0f}s; querying …", flush=True)
            results["sizes"][str(size)] = {
                "load_s": round(seconds, 1),
                "queries": await measure(http, headers, samples),
                "index": await index_size(engine, owner),
            }
        other = (await http.post("/v1/auth/anonymous")).raise_for_status().json()
        other_headers = {"Authorization": f"Bearer {other['accessToken']}"}
        results["write_path"] = await write_cost(engine, uuid.UUID(other["user"]["id"]), samples)
        results["write_path"]["put_through_gateway_p50_ms"] = await put_latency(http, other_headers, samples)
    await engine.dispose()
    return results


def print_table(results: dict[str, Any]) -> None:
    for size, data in results["sizes"].items():
        print(f"\n{int(size):,} bookmarks (loaded in {data['load_s']}s), index {data['index']}")
        for kind, q in data["queries"].items():
            timings = f"p50 {q['p50_ms']:7} ms  p99 {q['p99_ms']:7} ms  max {q['max_ms']:7} ms"
            print(f"  {kind:18} {q['q']!r:32} results {q['results']:3}  {timings}")
    print(f"\nwrite path: {results['write_path']}")


def search_stack(data_dir: Path) -> Any:
    """A search benchmark's own stack: an admin token for its statements, no browser, no rate limit."""
    from devstack.stack import StackConfig

    return StackConfig.for_tests(
        data_dir,
        extra_env={
            "ADMIN_TOKEN": ADMIN_TOKEN,
            "ENRICHMENT_BROWSER": "off",
            "GATEWAY_RATE_LIMIT_PER_MINUTE": "10000000",
            "GATEWAY_IP_RATE_LIMIT_PER_MINUTE": "10000000",
            "AUTH_ANONYMOUS_RATE_LIMIT_PER_MINUTE": "10000000",
        },
        output=open(data_dir / "stack.log", "w"),  # noqa: SIM115 - lives as long as the stack
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="*", type=int, default=[10_000, 100_000])
    parser.add_argument("--samples", type=int, default=200, help="queries per kind (p99 of 40 is their max)")
    parser.add_argument("--seed", type=int, default=2000, help="bookmarks written by put_bookmark; the rest are copies")
    args = parser.parse_args()
    from devstack.stack import Stack

    with tempfile.TemporaryDirectory(prefix="bench-search-") as data_dir:
        config = search_stack(Path(data_dir))
        print("search bench: starting the stack …", flush=True)
        with Stack(config) as stack:
            results = asyncio.run(run(stack.gateway_url, stack.dsn("bookmarks"), args.sizes, args.samples, args.seed))
    results |= {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "loadavg_1m": os.getloadavg()[0], "python": platform.python_version()},
    }
    write_results("search", results, latest=True)
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
