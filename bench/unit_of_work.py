"""Client CPU of one write's unit of work by the ways this code base can send it to PostgreSQL.

``.venv/bin/python bench/unit_of_work.py [--units 3000] [--rounds 2]``

Starts its own PostgreSQL (private data directory, free port) and times, in this process, the shape of
a bookmark create's unit of work: BEGIN, a read of one row under lock, an upsert, COMMIT, one unit after
the other on a pooled connection. The statements are built once and take their values as parameters.

  session     ``common.db.transaction`` (the write path's unit of work: a gated session, SQLAlchemy Core)
  connection  the same Core statements on an ``AsyncConnection`` (``engine.begin()``), no session
  driver      the same SQL on the pooled connection's asyncpg driver, in its own transaction

and the shape of a PUT in autocommit (decision 0158): the upsert alone, committed on its own.

  autocommit session   a gated session whose connection is in autocommit, the statement through it
  single statement     ``common.db.single_statements`` (the PUT's way: the session's connection)

Reports the client's CPU (user + system) and wall time per unit, per way and round, as a table, and
writes ``bench/results/unit-of-work-<timestamp>.json``. PostgreSQL's own CPU is the same for the three.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from inprocess import interleaved, on_private_postgres  # bench/ is on sys.path when this script runs
from result_files import write_results
from sqlalchemy import Column, Integer, MetaData, String, Table, bindparam, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncEngine

from common.db import SessionFactory, create_engine, create_session_factory, single_statements, transaction

metadata = MetaData()
rows = Table("unit_of_work_rows", metadata, Column("id", Integer, primary_key=True), Column("v", String))
READ = select(rows.c.v).where(rows.c.id == bindparam("key")).with_for_update()
UPSERT = (
    pg_insert(rows)
    .values(id=bindparam("id"), v=bindparam("v"))
    .on_conflict_do_update(index_elements=[rows.c.id], set_={"v": "changed"})
)
READ_SQL = "SELECT v FROM unit_of_work_rows WHERE id = $1 FOR UPDATE"
UPSERT_SQL = "INSERT INTO unit_of_work_rows (id, v) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET v = 'changed'"


def ways(engine: AsyncEngine, sessions: SessionFactory) -> dict[str, Callable[[int], Awaitable[None]]]:
    async def session(n: int) -> None:
        async with transaction(sessions) as unit:
            await unit.execute(READ, {"key": n % 1000})
            await unit.execute(UPSERT, {"id": n % 1000, "v": "new"})

    async def connection(n: int) -> None:
        async with engine.begin() as conn:
            await conn.execute(READ, {"key": n % 1000})
            await conn.execute(UPSERT, {"id": n % 1000, "v": "new"})

    async def driver(n: int) -> None:
        async with engine.connect() as conn:
            raw = (await conn.get_raw_connection()).driver_connection
            async with raw.transaction():
                await raw.fetch(READ_SQL, n % 1000)
                await raw.fetch(UPSERT_SQL, n % 1000, "new")

    async def autocommit_session(n: int) -> None:
        async with transaction(sessions) as unit:
            await unit.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
            await unit.execute(UPSERT, {"id": n % 1000, "v": "new"})

    async def single_statement(n: int) -> None:
        async with single_statements(sessions) as conn:
            await conn.execute(UPSERT, {"id": n % 1000, "v": "new"})

    return {"session": session, "connection": connection, "driver": driver,
            "autocommit session": autocommit_session, "single statement": single_statement}  # fmt: skip


async def measure(unit: Callable[[int], Awaitable[None]], units: int) -> dict[str, float]:
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    for n in range(units):
        await unit(n)
    after, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - started
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"cpu_us": round(cpu / units * 1e6), "wall_us": round(wall / units * 1e6)}


async def run(dsn: str, units: int, rounds: int) -> dict[str, list[dict[str, float]]]:
    engine = create_engine(dsn, pool_size=4)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(metadata.create_all)
        return await interleaved(
            ways(engine, create_session_factory(engine)), lambda unit: measure(unit, units), rounds
        )
    finally:
        await engine.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--units", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    results = on_private_postgres("bench-uow-", lambda dsn: run(dsn, args.units, args.rounds))
    print(f"{'way':<18} {'client CPU per unit (us), each round':>38} {'wall per unit (us)':>22}")
    for name, rounds in results.items():
        cpu = ", ".join(str(r["cpu_us"]) for r in rounds)
        wall = ", ".join(str(r["wall_us"]) for r in rounds)
        print(f"{name:<18} {cpu:>38} {wall:>22}")
    report: dict[str, Any] = {"units": args.units, "at": datetime.now(UTC).isoformat(), "ways": results}
    path = write_results("unit-of-work", report)
    print(f"results written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
