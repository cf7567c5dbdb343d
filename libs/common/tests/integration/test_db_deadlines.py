"""Client-side database deadlines against a real PostgreSQL that stops answering (SIGSTOP of the postmaster
and every backend, nothing closed): a unit of work, its statements through SQLAlchemy or prepared,
fails as an outage instead of hanging, waiters at the gate give up too, a connection that timed out is
discarded rather than handed to the next unit mid-statement, and everything works again after SIGCONT.

Deadlines are short here (fractions of a second) so the tests are quick; ``HANG_GUARD`` only turns a hang
into a failure: the assertions are about outcomes, not durations."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psutil
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from common.db import (
    DatabaseDeadlineExceeded,
    DatabaseReadiness,
    Deadlines,
    create_engine,
    create_session_factory,
    transaction,
)
from common.metrics import DB_DEADLINES_EXCEEDED
from common.outages import is_outage
from devstack.postgres import EmbeddedPostgres
from devstack.testing import free_port

DEADLINES = Deadlines(connect=0.5, acquire=0.4, statement=0.5)
HANG_GUARD = 15.0  # far beyond any deadline above: reaching it means something waited without one
SERVICE = "deadline-test"


@pytest.fixture
def postgres(pg_data_dir: Path) -> Iterator[EmbeddedPostgres]:
    server = EmbeddedPostgres(pg_data_dir, free_port(), durable=False)
    server.start()
    server.ensure_databases(["deadlines"])
    yield server
    server.stop()


@pytest.fixture
async def engine(postgres: EmbeddedPostgres) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(postgres.dsn("deadlines"), pool_size=4, deadlines=DEADLINES, service=SERVICE)
    yield engine
    await engine.dispose()


def _pids(server: EmbeddedPostgres) -> list[int]:
    postmaster = int((server.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
    return [postmaster, *(c.pid for c in psutil.Process(postmaster).children(recursive=True))]


@contextlib.contextmanager
def stopped(server: EmbeddedPostgres) -> Iterator[None]:
    pids = _pids(server)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in reversed(pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


async def _warm(engine: AsyncEngine, count: int) -> None:
    """Open ``count`` pooled connections, so a stopped server meets connections, not connects."""
    sessions = create_session_factory(engine, concurrency=count)

    async def one() -> None:
        async with transaction(sessions) as session:
            await session.execute(text("SELECT pg_sleep(0.05)"))

    await asyncio.gather(*(one() for _ in range(count)))


def _exceeded(phase: str) -> float:
    return DB_DEADLINES_EXCEEDED.labels(SERVICE, phase)._value.get()


async def _echo(engine: AsyncEngine, value: int) -> int:
    async with transaction(create_session_factory(engine)) as session:
        return int((await session.execute(text("SELECT CAST(:v AS int)"), {"v": value})).scalar_one())


async def test_a_session_statement_on_a_hanging_server_fails_as_an_outage_and_its_connection_is_discarded(
    postgres: EmbeddedPostgres, engine: AsyncEngine
) -> None:
    await _warm(engine, 2)
    sessions = create_session_factory(engine)
    before = _exceeded("statement")
    with stopped(postgres):
        async with asyncio.timeout(HANG_GUARD):
            with pytest.raises(Exception) as failure:
                async with transaction(sessions) as session:
                    await session.execute(text("SELECT 1"))
        assert is_outage(failure.value), repr(failure.value)
        assert _exceeded("statement") == before + 1
    # Every unit after the hang gets its own answer: no connection was left in the pool mid-statement.
    async with asyncio.timeout(HANG_GUARD):
        assert await asyncio.gather(*(_echo(engine, n) for n in range(8))) == list(range(8))


async def test_units_waiting_at_the_gate_give_up_within_the_acquire_deadline(
    postgres: EmbeddedPostgres, engine: AsyncEngine
) -> None:
    await _warm(engine, 1)
    sessions = create_session_factory(engine, concurrency=1)
    before = _exceeded("acquire")

    async def unit() -> None:
        async with transaction(sessions) as session:
            await session.execute(text("SELECT 1"))

    with stopped(postgres):
        async with asyncio.timeout(HANG_GUARD):
            outcomes = await asyncio.gather(*(unit() for _ in range(5)), return_exceptions=True)
    assert all(isinstance(o, Exception) and is_outage(o) for o in outcomes), outcomes
    waited_out = [o for o in outcomes if isinstance(o, DatabaseDeadlineExceeded)]
    assert waited_out, outcomes
    assert _exceeded("acquire") == before + len(waited_out)
    async with asyncio.timeout(HANG_GUARD):
        await unit()


async def test_opening_a_connection_to_a_hanging_server_fails_within_the_connect_deadline(
    postgres: EmbeddedPostgres, engine: AsyncEngine
) -> None:
    sessions = create_session_factory(engine)  # nothing pooled yet: the unit has to connect
    with stopped(postgres):
        async with asyncio.timeout(HANG_GUARD):
            with pytest.raises(Exception) as failure:
                async with transaction(sessions) as session:
                    await session.execute(text("SELECT 1"))
    assert is_outage(failure.value), repr(failure.value)
    async with asyncio.timeout(HANG_GUARD):
        assert await _echo(engine, 7) == 7


async def test_readiness_fails_after_its_grace_while_the_server_hangs_and_recovers_by_itself(
    postgres: EmbeddedPostgres, engine: AsyncEngine
) -> None:
    await _warm(engine, 2)
    ready = DatabaseReadiness(engine, grace_seconds=0.0)
    await ready()
    with stopped(postgres):
        async with asyncio.timeout(HANG_GUARD):
            with pytest.raises(Exception) as failure:
                await ready()
    assert is_outage(failure.value)
    async with asyncio.timeout(HANG_GUARD):
        await ready()
    assert ready.failing_since is None
