"""Driver transactions (common.db.driver_transaction) with prepared statements: they commit or roll back
as one unit, return rows as a session would, hand the connection back clean and respect the gate."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import ARRAY, Column, DateTime, MetaData, Table, Text, bindparam, func, insert, select, text
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.ext.asyncio import AsyncEngine

from common.db import Prepared, create_engine, create_session_factory, driver_transaction

metadata = MetaData()
notes = Table(
    "notes", metadata,
    Column("id", UUID(as_uuid=True), primary_key=True), Column("tags", ARRAY(Text), nullable=False),
    Column("body", JSONB, nullable=False), Column("at", DateTime(timezone=True), nullable=False),
)  # fmt: skip
ADD = Prepared.of(
    insert(notes).values(id=bindparam("id"), tags=bindparam("tags"), body=bindparam("body"), at=func.now())
)
READ = Prepared.of(select(notes.c.id, notes.c.tags, notes.c.body, notes.c.at).where(notes.c.id == bindparam("id")))


@pytest.fixture
async def engine(infra: Any) -> AsyncIterator[AsyncEngine]:
    name = f"driver_{uuid.uuid4().hex[:8]}"
    infra.postgres.ensure_databases([name])
    engine = create_engine(infra.postgres.dsn(name), pool_size=1, max_overflow=0)
    async with engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
    yield engine
    await engine.dispose()


async def test_a_committed_unit_returns_rows_as_a_session_does(engine: AsyncEngine) -> None:
    sessions, key = create_session_factory(engine), uuid.uuid4()
    async with driver_transaction(sessions) as driver:
        await ADD.rows(driver, {"id": key, "tags": ("a", "b"), "body": {"k": [1, "x"]}})
        [row] = await READ.rows(driver, {"id": key})
    assert row["id"] == key and isinstance(row["id"], uuid.UUID)
    assert row["tags"] == ["a", "b"] and row["body"] == {"k": [1, "x"]}
    assert isinstance(row["at"], datetime) and row["at"].tzinfo is not None
    async with sessions() as session:
        stored = (await session.execute(select(notes.c.body).where(notes.c.id == key))).scalar_one()
    assert stored == {"k": [1, "x"]}


async def test_an_exception_rolls_the_unit_back_and_the_connection_comes_back_clean(engine: AsyncEngine) -> None:
    sessions, key = create_session_factory(engine), uuid.uuid4()
    with pytest.raises(RuntimeError, match="midway"):
        async with driver_transaction(sessions) as driver:
            await ADD.rows(driver, {"id": key, "tags": [], "body": {}})
            raise RuntimeError("midway")
    async with sessions() as session:  # the pool's only connection: no transaction left open on it
        assert (await session.execute(text("SELECT count(*) FROM notes"))).scalar_one() == 0
        assert (await session.execute(text("SELECT txid_current_if_assigned()"))).scalar_one() is None
    async with driver_transaction(sessions) as driver:
        await ADD.rows(driver, {"id": key, "tags": [], "body": {}})
    async with sessions() as session:
        assert (await session.execute(text("SELECT count(*) FROM notes"))).scalar_one() == 1


async def test_a_driver_transaction_holds_a_permit_of_the_gate(engine: AsyncEngine) -> None:
    # Two pooled connections, one permit: only the gate can make the second unit wait.
    roomy = create_engine(engine.url.render_as_string(hide_password=False), pool_size=2, max_overflow=0)
    sessions = create_session_factory(roomy, concurrency=1)
    order: list[str] = []
    first_open = asyncio.Event()

    async def first() -> None:
        async with driver_transaction(sessions):
            first_open.set()
            await asyncio.sleep(0.2)
            order.append("first done")

    async def second() -> None:
        await first_open.wait()
        async with driver_transaction(sessions):
            order.append("second in")

    try:
        await asyncio.gather(first(), second())
    finally:
        await roomy.dispose()
    assert order == ["first done", "second in"]
