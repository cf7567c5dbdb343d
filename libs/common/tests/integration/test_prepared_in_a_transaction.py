"""Prepared statements (common.db.Prepared) in a unit of work (common.db.transaction): they run on the
session's own asyncpg connection (common.db.driver_of), commit or roll back with the session's statements
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
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from common.db import Prepared, create_engine, create_session_factory, driver_of, transaction
from common.outages import is_outage

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
    async with transaction(sessions) as session:
        await ADD.rows(session, {"id": key, "tags": ("a", "b"), "body": {"k": [1, "x"]}})
        [row] = await READ.rows(session, {"id": key})
    assert row["id"] == key and isinstance(row["id"], uuid.UUID)
    assert row["tags"] == ["a", "b"] and row["body"] == {"k": [1, "x"]}
    assert isinstance(row["at"], datetime) and row["at"].tzinfo is not None
    async with sessions() as session:
        stored = (await session.execute(select(notes.c.body).where(notes.c.id == key))).scalar_one()
    assert stored == {"k": [1, "x"]}


async def test_an_exception_rolls_the_unit_back_and_the_connection_comes_back_clean(engine: AsyncEngine) -> None:
    sessions, key = create_session_factory(engine), uuid.uuid4()
    with pytest.raises(RuntimeError, match="midway"):
        async with transaction(sessions) as session:
            await ADD.rows(session, {"id": key, "tags": [], "body": {}})
            raise RuntimeError("midway")
    async with sessions() as session:  # the pool's only connection: no transaction left open on it
        assert (await session.execute(text("SELECT count(*) FROM notes"))).scalar_one() == 0
        assert (await session.execute(text("SELECT txid_current_if_assigned()"))).scalar_one() is None
    async with transaction(sessions) as session:
        await ADD.rows(session, {"id": key, "tags": [], "body": {}})
    async with sessions() as session:
        assert (await session.execute(text("SELECT count(*) FROM notes"))).scalar_one() == 1


async def test_prepared_and_session_statements_are_one_unit_in_either_order(engine: AsyncEngine) -> None:
    sessions, first, second = create_session_factory(engine), uuid.uuid4(), uuid.uuid4()
    add = insert(notes).values(tags=[], body={}, at=func.now())
    with pytest.raises(RuntimeError, match="midway"):
        async with transaction(sessions) as session:
            await session.execute(add.values(id=first))  # SQLAlchemy begins the transaction
            await ADD.rows(session, {"id": second, "tags": [], "body": {}})
            raise RuntimeError("midway")
    with pytest.raises(RuntimeError, match="midway"):
        async with transaction(sessions) as session:
            await ADD.rows(session, {"id": second, "tags": [], "body": {}})  # driver_of begins it
            assert (await session.execute(select(func.count()).select_from(notes))).scalar_one() == 1
            await session.execute(add.values(id=first))
            raise RuntimeError("midway")
    async with transaction(sessions) as session:
        assert (await session.execute(select(func.count()).select_from(notes))).scalar_one() == 0
        await ADD.rows(session, {"id": second, "tags": [], "body": {}})
        await session.execute(add.values(id=first))
    async with sessions() as session:
        assert (await session.execute(select(func.count()).select_from(notes))).scalar_one() == 2


async def test_a_unit_with_prepared_statements_holds_a_permit_of_the_gate(engine: AsyncEngine) -> None:
    # Two pooled connections, one permit: only the gate can make the second unit wait.
    roomy = create_engine(engine.url.render_as_string(hide_password=False), pool_size=2, max_overflow=0)
    sessions = create_session_factory(roomy, concurrency=1)
    order: list[str] = []
    first_open = asyncio.Event()

    async def first() -> None:
        async with transaction(sessions) as session:
            await driver_of(session)
            first_open.set()
            await asyncio.sleep(0.2)
            order.append("first done")

    async def second() -> None:
        await first_open.wait()
        async with transaction(sessions) as session:
            await driver_of(session)
            order.append("second in")

    try:
        await asyncio.gather(first(), second())
    finally:
        await roomy.dispose()
    assert order == ["first done", "second in"]


def _server_fatal(code: str = "57P01", message: str = "terminating connection due to administrator command") -> bytes:
    """The ErrorResponse a backend sends on its own before closing the socket (shutdown, crash, kill)."""
    fields = (
        b"".join(
            tag + value.encode() + b"\0"
            for tag, value in ((b"S", "FATAL"), (b"V", "FATAL"), (b"C", code), (b"M", message))
        )
        + b"\0"
    )
    return b"E" + (len(fields) + 4).to_bytes(4, "big") + fields


async def _pooled_driver(sessions: Any) -> Any:
    """The asyncpg connection the pool (of one) hands out next, left idle in the pool."""
    async with transaction(sessions) as session:
        return await driver_of(session)


async def test_a_connection_the_server_is_dropping_is_replaced_before_the_unit_begins(engine: AsyncEngine) -> None:
    """Issue 16 (found by the self-healing e2e test): the server's FATAL reaches an idle pooled connection
    a moment before its socket closes. In between, asyncpg still calls the connection open but refuses any
    operation ("another operation is in progress"); a write that checked it out then failed with 500. The
    unit must begin on a fresh connection instead, and the dropped one must not go back to the pool."""
    sessions, key = create_session_factory(engine), uuid.uuid4()
    dropped = await _pooled_driver(sessions)
    dropped._protocol.data_received(_server_fatal())  # the server's message, its socket's end not yet seen
    assert not dropped.is_closed()
    async with transaction(sessions) as session:
        await ADD.rows(session, {"id": key, "tags": [], "body": {}})
        assert await driver_of(session) is not dropped
    assert dropped.is_closed()
    async with sessions() as session:
        assert (await session.execute(select(func.count()).select_from(notes))).scalar_one() == 1


async def test_a_session_on_a_connection_the_server_is_dropping_fails_as_an_outage(engine: AsyncEngine) -> None:
    """The same moment through a session's own statement (no Prepared one first): SQLAlchemy invalidates the connection, so the error is an
    outage (503 with Retry-After, retried by consumers without limit), not a bug, and the pool's next
    connection is fresh."""
    sessions = create_session_factory(engine)
    dropped = await _pooled_driver(sessions)
    dropped._protocol.data_received(_server_fatal("57P02", "terminating connection due to unexpected postmaster exit"))
    with pytest.raises(DBAPIError) as failure:
        async with sessions() as session:
            await session.execute(text("SELECT 1"))
    assert is_outage(failure.value) and failure.value.connection_invalidated
    assert dropped.is_closed()
    async with sessions() as session:
        assert (await session.execute(text("SELECT 1"))).scalar_one() == 1
