"""Search benchmark on a real-text library: WordNet's synsets as 100,000 distinct bookmarks
(``bench/wordnet_corpus.py``; needs ``apt-get install --no-install-recommends wordnet-base``).

    .venv/bin/python bench/search_corpus.py [--size 100000] [--per-kind 150] [--quick] [--explain]
        [--page-share 0.15] [--page-chars 2500]

Starts its own stack (private data dir, free ports). One user's library is written straight into the
bookmarks database through the service's own statements, as bench/search.py does, but every row is its
own document (no copies): the 85 % without page text with the statement a PUT runs
(``rows.put_statement`` and ``put_parameters``, executemany in batches of 500), the 15 % with page
text with ``repository.put_bookmark(session, record, PageText(text, "en"))``, the upsert an applied
enrichment result runs (page vector, English stems, the user's search languages).

Then, one at a time through the gateway (``GET /v1/bookmarks/search``, limit 20), ``--per-kind`` queries
of each kind drawn from the corpus's own word frequencies (``wordnet_corpus.query_sets``): one common word
(~10 % of the library), a medium word (~1 %), a rare word (2-5 documents), two words, a phrase, a word and
a filter (tag:, domain: or -is:archived), a filter only, no match: p50/p99/max per kind and the CPU per
query of each process of the stack (bench/run.py's ``stack_cpu_seconds``).

Then the quality of the ranking on a labelled set (``wordnet_corpus.labelled_set``: 25 one-word lemma
queries, 25 two-gloss-word queries, relevant documents and grades known from WordNet), limit 10:
precision@10, nDCG@10, whether the query's own synset is in the top 10, whether every result whose
title or tags hold all the words comes before every one where they do not (the contract's ranking), and
the share of results found through their page text only.

``--explain``: EXPLAIN (ANALYZE, BUFFERS) of the statements the service runs (the same ``tier_page``
statements: each tier's bounded window read, then its GIN read; a filter-only query's one walk) for the
first and the slowest query of each kind but the no-match one, after the measurements; printed and
kept in the JSON.

Writes ``bench/results/search_corpus-<timestamp>.json`` and ``bench/results/search_corpus-latest.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa
import wordnet_corpus
from result_files import write_results  # bench/ is on sys.path when this script runs
from run import cpu_ms_per_op, python_loop_cpu_s, stack_cpu_seconds  # bench/ is on sys.path when this script runs
from search import search_stack
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine

from bookmarks.domain.model import Bookmark
from bookmarks.search.index import SEARCH_INDEX
from bookmarks.store import repository
from bookmarks.store.rows import PageText, install_index, put_parameters, put_statement

BATCH = 500
BASE = datetime(2021, 1, 1, tzinfo=UTC)
TARGET_P99_MS = 20.0
SEARCH_INDEXES = ("ix_bookmarks_search", "ix_bookmarks_search_head", "ix_bookmarks_search_ab")

install_index(SEARCH_INDEX)  # the bookmark row's statements write search's columns (as bookmarks.main does)


def record_of(owner: uuid.UUID, doc: wordnet_corpus.Document) -> Bookmark:
    saved = BASE + timedelta(minutes=doc.minutes)
    return Bookmark(
        owner_uid=owner,
        client_bookmark_id=doc.bookmark_id,
        url=doc.url,
        normalized_url=doc.url,
        domain=doc.domain,
        created_at=saved,
        updated_at=saved,
        title=doc.title,
        description=doc.description,
        tags=(doc.tags[0],),
        user_tags=(doc.tags[1],),
        enrichment_status="completed" if doc.page_text else "failed",
        snapshot_status="ready" if doc.page_text else "failed",
        is_archived=doc.is_archived,
        is_favorite=doc.is_favorite,
        client_saved_at=saved,
        enriched_at=saved if doc.page_text else None,
    )


async def load(engine: AsyncEngine, owner: uuid.UUID, corpus: wordnet_corpus.Corpus) -> dict[str, Any]:
    began = time.perf_counter()
    async with engine.begin() as conn:  # the user's stream row, as any write through the service makes it
        await repository.allocate_positions(AsyncSession(bind=conn), owner)
    plain = [d for d in corpus.documents if d.page_text is None]
    paged = [d for d in corpus.documents if d.page_text is not None]
    done = 0
    for batch in wordnet_corpus.iter_batches(plain, BATCH):
        async with engine.begin() as conn:
            await conn.execute(put_statement(False), [put_parameters(record_of(owner, d)) for d in batch])
        done += len(batch)
        if done % 10_000 < BATCH:
            print(f"  {done:,} / {len(plain):,} without page text", flush=True)
    plain_s = time.perf_counter() - began
    for batch in wordnet_corpus.iter_batches(paged, BATCH):
        async with engine.begin() as conn:
            session = AsyncSession(bind=conn)
            for d in batch:
                await repository.put_bookmark(session, record_of(owner, d), PageText(d.page_text, "en"))
    autocommit = create_async_engine(engine.url, isolation_level="AUTOCOMMIT")
    async with autocommit.connect() as conn:
        await conn.exec_driver_sql("VACUUM ANALYZE bookmarks")
    await autocommit.dispose()
    total = time.perf_counter() - began
    async with engine.connect() as conn:  # None: an index this revision does not have
        sizes = {name: (await conn.execute(sa.select(sa.func.pg_relation_size(sa.func.to_regclass(name))))).scalar()
                 for name in SEARCH_INDEXES}  # fmt: skip
    return {"load_s": round(total, 1), "without_page_s": round(plain_s, 1), "rows": len(corpus.documents),
            "index_bytes": sizes}  # fmt: skip


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


async def measure(http: httpx.AsyncClient, headers: dict[str, str], sets: dict[str, list[str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, queries in sets.items():
        for q in queries[:3]:  # warm-up
            (await http.get("/v1/bookmarks/search", params={"q": q}, headers=headers)).raise_for_status()
        times, counts = [], []
        before = stack_cpu_seconds()
        for q in queries:
            t0 = time.perf_counter()
            response = await http.get("/v1/bookmarks/search", params={"q": q}, headers=headers)
            times.append(time.perf_counter() - t0)
            response.raise_for_status()
            counts.append(len(response.json()["data"]["results"]))
        cpu = cpu_ms_per_op(before, stack_cpu_seconds(), len(queries))
        slowest = sorted(zip(times, queries, strict=True), reverse=True)[:3]
        out[kind] = {
            "queries": len(queries), "examples": queries[:3],
            "full_pages": sum(1 for c in counts if c == 20),
            "p50_ms": round(pct(times, 50) * 1000, 1), "p99_ms": round(pct(times, 99) * 1000, 1),
            "max_ms": round(max(times) * 1000, 1),
            "slowest": [[q, round(t * 1000, 1)] for t, q in slowest],
            "cpu_ms_per_query": cpu["cpu_ms_per_op"], "cpu_ms_per_query_total": cpu["cpu_ms_per_op_total"],
        }  # fmt: skip
    return out


def dcg(grades: list[int]) -> float:
    return sum(float(2**g - 1) / math.log2(i + 2) for i, g in enumerate(grades))


async def quality(
    http: httpx.AsyncClient, headers: dict[str, str], corpus: wordnet_corpus.Corpus, labelled: list[Any]
) -> dict[str, Any]:
    """Precision@10 (relevant: grade ≥ 1; over min(10, relevant)), nDCG@10, target in top 10, title order."""
    by_id = {d.bookmark_id: i for i, d in enumerate(corpus.documents)}
    per_kind: dict[str, list[dict[str, Any]]] = {}
    for item in labelled:
        response = await http.get("/v1/bookmarks/search", params={"q": item.q, "limit": 10}, headers=headers)
        response.raise_for_status()
        ids = [r["bookmark"]["clientBookmarkId"] for r in response.json()["data"]["results"]]
        grades = [item.grades.get(i, 0) for i in ids]
        words = set(wordnet_corpus.fold_tokens(item.q))
        in_head = [corpus.in_head(by_id[i], words) for i in ids]
        # Title/tag matches first: no result with all the words in its title or tags after one without.
        ordered = all(not (in_head[j] and not in_head[i]) for i in range(len(ids)) for j in range(i + 1, len(ids)))
        relevant = sum(1 for g in item.grades.values() if g >= 1)
        ideal = sorted(item.grades.values(), reverse=True)[:10]
        per_kind.setdefault(item.kind, []).append({
            "q": item.q, "returned": len(ids), "relevant": relevant,
            "precision_at_10": sum(1 for g in grades if g >= 1) / max(1, min(10, relevant)),
            "ndcg_at_10": dcg(grades) / dcg(ideal) if ideal else 0.0,
            "target_in_top_10": item.target in ids, "title_tags_first": ordered,
            # Results graded 0 (the words are in neither title, tags nor description) that have page text:
            # found through their page only, listed among (or before) the description matches.
            "page_only_results": sum(1 for i, g in zip(ids, grades, strict=True)
                                     if g == 0 and corpus.documents[by_id[i]].page_text),
        })  # fmt: skip
    summary: dict[str, Any] = {}
    everything = [r for kind_rows in per_kind.values() for r in kind_rows]
    for kind, rows in [*per_kind.items(), ("all", everything)]:
        summary[kind] = {
            "queries": len(rows),
            "precision_at_10": round(sum(r["precision_at_10"] for r in rows) / len(rows), 3),
            "ndcg_at_10": round(sum(r["ndcg_at_10"] for r in rows) / len(rows), 3),
            "target_in_top_10": round(sum(r["target_in_top_10"] for r in rows) / len(rows), 3),
            "title_tags_first": round(sum(r["title_tags_first"] for r in rows) / len(rows), 3),
            "page_only_share_of_results": round(
                sum(r["page_only_results"] for r in rows) / max(1, sum(r["returned"] for r in rows)), 3
            ),
        }
    return {"summary": summary, "queries": per_kind}


async def explain(engine: AsyncEngine, owner: uuid.UUID, chosen: dict[str, list[str]]) -> dict[str, list[str]]:
    """EXPLAIN ANALYZE of the service's own tier statements (each tier: the bounded window read, then the
    GIN read the service falls back to when the window holds less than a page) for the chosen queries."""
    from bookmarks.search import queries
    from bookmarks.search.query import parse_query
    from bookmarks.search.sql import planner_settings, search_plans, tier_page, tiers_to_read

    plans: dict[str, list[str]] = {}
    for kind, q in ((kind, q) for kind, texts in chosen.items() for q in texts):
        query = parse_query(q)
        lines = plans.setdefault(kind, [])
        async with engine.connect() as conn:
            match, _ = await queries.context(conn, query, owner)
            for tier, after in tiers_to_read(match, None):
                # Filter-only: one unbounded newest-first walk. With words: the window read, then the GIN read.
                reads = [(None, False)] if tier is None else [(queries.WINDOWS[tier], False), (None, True)]
                for window, bitmap_only in reads:
                    statement = tier_page(query, match, queries.COLUMNS, queries._SELECTED, owner=owner,
                                          tier=tier, after=after, limit=21, window=window)  # fmt: skip
                    # As the service: bitmap scans only for a GIN read, and never a sequential scan.
                    await conn.execute(planner_settings(bitmap_only=bitmap_only))
                    await conn.execute(sa.select(search_plans()))
                    # render_postcompile: the literal_execute constants (the A and B weights) inline.
                    compiled = statement.compile(dialect=engine.dialect, compile_kwargs={"render_postcompile": True})
                    params = compiled.construct_params()
                    sql = compiled.string
                    raw = await conn.get_raw_connection()
                    driver = raw.driver_connection
                    assert driver is not None
                    positional = [params[name] for name in (compiled.positiontup or [])]
                    rows = await driver.fetch("EXPLAIN (ANALYZE, BUFFERS) " + sql, *positional)
                    lines.append(f"-- {q!r} tier {tier} window {window}")
                    lines += [r[0] for r in rows]
            await conn.rollback()
    return plans


async def run(gateway_url: str, dsn: str, args: argparse.Namespace) -> dict[str, Any]:
    print(f"search corpus bench: building {args.size:,} documents from WordNet …", flush=True)
    corpus = wordnet_corpus.build(args.size, seed=args.seed, page_share=args.page_share, page_chars=args.page_chars)
    sets = wordnet_corpus.query_sets(corpus, args.per_kind)
    labelled = wordnet_corpus.labelled_set(corpus)
    engine = create_async_engine(dsn, pool_size=2)
    results: dict[str, Any] = {"corpus": corpus.stats() | {"seed": args.seed, "source": "WordNet 3.0 (wordnet-base)"}}
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as http:
        session = (await http.post("/v1/auth/anonymous")).raise_for_status().json()
        headers = {"Authorization": f"Bearer {session['accessToken']}"}
        owner = uuid.UUID(session["user"]["id"])
        print(f"search corpus bench: loading {args.size:,} bookmarks …", flush=True)
        results["load"] = await load(engine, owner, corpus)
        print(f"search corpus bench: loaded in {results['load']['load_s']}s; querying …", flush=True)
        results["loadavg_before_queries"] = [round(x, 2) for x in os.getloadavg()]
        results["queries"] = await measure(http, headers, sets)
        results["loadavg_after_queries"] = [round(x, 2) for x in os.getloadavg()]
        results["quality"] = await quality(http, headers, corpus, labelled)
        if args.explain:
            kinds = (
                "one_word_common",
                "one_word_medium",
                "one_word_rare",
                "two_words",
                "phrase",
                "word_filter",
                "filter_only",
            )
            chosen = {k: list(dict.fromkeys([sets[k][0], results["queries"][k]["slowest"][0][0]])) for k in kinds}
            results["explain"] = await explain(engine, owner, chosen)
    await engine.dispose()
    return results


def print_table(results: dict[str, Any]) -> None:
    print(f"\ncorpus: {results['corpus']}\nload: {results['load']}")
    print(f"load average before/after the queries: {results['loadavg_before_queries']} / "
          f"{results['loadavg_after_queries']}")  # fmt: skip
    print(f"\n{'kind':16} {'example':40} {'full':>5} {'p50':>7} {'p99':>7} {'max':>7}  cpu ms/query (stack)")
    for kind, q in results["queries"].items():
        flag = "" if q["p99_ms"] <= TARGET_P99_MS else "  > 20 ms"
        print(f"{kind:16} {q['examples'][0]!r:40} {q['full_pages']:5} {q['p50_ms']:7} {q['p99_ms']:7} "
              f"{q['max_ms']:7}  {q['cpu_ms_per_query_total']:6} {q['cpu_ms_per_query']}{flag}")  # fmt: skip
    print("\nranking quality (labelled set, limit 10):")
    for kind, s in results["quality"]["summary"].items():
        print(f"  {kind:6} {s}")
    for kind, lines in results.get("explain", {}).items():
        print(f"\nEXPLAIN ANALYZE, {kind}:")
        print("\n".join("  " + line for line in lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000, help="documents (at most 117,659)")
    parser.add_argument("--per-kind", type=int, default=150, help="queries per kind")
    parser.add_argument("--seed", type=int, default=1, help="which synsets, dates and page-text rows")
    parser.add_argument("--page-share", type=float, default=wordnet_corpus.PAGE_SHARE,
                        help="share of the bookmarks with page text")  # fmt: skip
    parser.add_argument("--page-chars", type=int, default=wordnet_corpus.PAGE_CHARS,
                        help="about this many characters of page text each (at most 32,000 are indexed)")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="20,000 documents, 50 queries per kind")
    parser.add_argument("--explain", action="store_true", help="EXPLAIN ANALYZE the one-word statements")
    args = parser.parse_args()
    if args.quick:
        args.size, args.per_kind = 20_000, 50
    speed_at_start = python_loop_cpu_s()
    from devstack.stack import Stack

    with tempfile.TemporaryDirectory(prefix="bench-search-corpus-") as data_dir:
        config = search_stack(Path(data_dir))
        print("search corpus bench: starting the stack …", flush=True)
        with Stack(config) as stack:
            results = asyncio.run(run(stack.gateway_url, stack.dsn("bookmarks"), args))
    results |= {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "loadavg": [round(x, 2) for x in os.getloadavg()],
                    "python": platform.python_version(),
                    "python_loop_cpu_s": {"start": speed_at_start, "end": python_loop_cpu_s()}},
    }  # fmt: skip
    write_results("search_corpus", results, latest=True)
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
