"""Client CPU of reading stored bookmarks into records, by how the ``strings`` (``text[]``) columns are read.

``.venv/bin/python bench/row_reading.py [--rows 20000] [--rounds 5]``

Starts its own PostgreSQL (private data directory, free port), creates the bookmarks table, stores
``--rows`` bookmarks (three tags, two user tags, two collections each) and reads them all, in this process,
the way an export, a search page or a bulk change does: ``select(*BOOKMARK_COLUMNS)`` through a session,
``Bookmark.from_row`` per row mapping. Two ways, interleaved per round:

  strings   the shipped columns (``bookmarks.store.columns.Strings``: the driver's list becomes the tuple)
  array     the same columns read as SQLAlchemy's ``ARRAY(Text)`` (two list copies per value in Python),
            the record then built with a list-to-tuple check per field

Reports the client's CPU (user + system) per row, per way and round, as a table, and writes
``bench/results/row-reading-<timestamp>.json``. PostgreSQL's own work is the same for both.
"""

from __future__ import annotations

import argparse
import resource
import sys
import uuid
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from inprocess import interleaved, on_private_postgres  # bench/ is on sys.path when this script runs
from result_files import write_results
from sqlalchemy import ARRAY, Text, select, text, type_coerce
from sqlmodel import SQLModel

from bookmarks.domain.model import _ENUM_SLOTS, Bookmark, _row_plan
from bookmarks.store.columns import Strings
from bookmarks.store.tables import BOOKMARK_COLUMNS, bookmarks
from common.db import SessionFactory, create_engine, create_session_factory

OWNER = uuid.UUID("00000000-0000-4000-8000-000000000001")
SEED_SQL = text("""
INSERT INTO bookmarks (owner_uid, client_bookmark_id, url, normalized_url, domain, title, description, tags,
                       user_tags, collection_ids, created_at, updated_at, enrichment_status, snapshot_status,
                       wire_document)
SELECT :owner, 'b' || g, 'https://site' || (g % 97) || '.example/p/' || g,
       'https://site' || (g % 97) || '.example/p/' || g,
       'site' || (g % 97) || '.example', 'A title ' || g, 'A description long enough to look real ' || g,
       ARRAY['ai', 'web', 'tag' || (g % 13)], ARRAY['mine', 'read'], ARRAY['c' || (g % 30), 'c1'],
       now(), now() + g * interval '1 microsecond', 'completed', 'ready', ''
FROM generate_series(1, :rows) AS g
""")
SHIPPED = select(*BOOKMARK_COLUMNS).where(bookmarks.c.owner_uid == OWNER)
AS_ARRAY = select(
    *(type_coerce(c, ARRAY(Text)).label(c.name) if isinstance(c.type, Strings) else c for c in BOOKMARK_COLUMNS)
).where(bookmarks.c.owner_uid == OWNER)


def record_checking_lists(row: Mapping[str, Any]) -> Bookmark:
    """``Bookmark.from_row`` for rows whose arrays arrive as lists: each field checked, lists made tuples."""
    getter, setters = _row_plan(Bookmark)
    record: Bookmark = object.__new__(Bookmark)
    for set_slot, value in zip(setters, getter(row), strict=True):
        set_slot(record, tuple(value) if isinstance(value, list) else value)
    for name, enum_type, set_slot in _ENUM_SLOTS:
        if (value := getattr(record, name)) is not None:
            set_slot(record, enum_type(value))
    return record


def ways(sessions: SessionFactory) -> dict[str, Callable[[], Awaitable[list[Bookmark]]]]:
    async def strings() -> list[Bookmark]:
        async with sessions() as session:
            return [Bookmark.from_row(r) for r in (await session.execute(SHIPPED)).mappings()]

    async def array() -> list[Bookmark]:
        async with sessions() as session:
            return [record_checking_lists(r) for r in (await session.execute(AS_ARRAY)).mappings()]

    return {"strings": strings, "array": array}


async def measure(read: Callable[[], Awaitable[list[Bookmark]]], rows: int) -> float:
    before = resource.getrusage(resource.RUSAGE_SELF)
    records = await read()
    after = resource.getrusage(resource.RUSAGE_SELF)
    if len(records) != rows or records[0].tags[:2] != ("ai", "web"):
        raise SystemExit("the read did not return the stored bookmarks as records")
    return round((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / rows * 1e6, 2)


async def run(dsn: str, rows: int, rounds: int) -> dict[str, list[float]]:
    engine = create_engine(dsn, pool_size=2)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(SQLModel.metadata.create_all, tables=[bookmarks])
            await conn.execute(SEED_SQL, {"owner": OWNER, "rows": rows})
        return await interleaved(ways(create_session_factory(engine)), lambda read: measure(read, rows), rounds)
    finally:
        await engine.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results = on_private_postgres("bench-rows-", lambda dsn: run(dsn, args.rows, args.rounds))
    print(f"{'way':<8} {'client CPU per row (us), each round':>44} {'median':>8}")
    for name, figures in results.items():
        median = sorted(figures)[len(figures) // 2]
        print(f"{name:<8} {', '.join(f'{f:.2f}' for f in figures):>44} {median:>8.2f}")
    report: dict[str, Any] = {"rows": args.rows, "at": datetime.now(UTC).isoformat(), "ways": results}
    path = write_results("row-reading", report)
    print(f"results written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
