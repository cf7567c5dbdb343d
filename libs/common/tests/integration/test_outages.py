"""The event plumbing through real outages: PostgreSQL stopped while a consumer
works (events wait, none is dead-lettered) and a broker that restarts empty (the relay notices the lost
records and re-publishes its retained window, so a consumer that had not read them yet still gets them)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
from plumbing_support import effects_metadata, effects_of, record_effect, saved, write_outbox
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from common.consumer import ConsumerRunner
from common.db import create_engine, create_session_factory
from common.events import TOPICS, BookmarkSaved
from common.migrations import create_infra_tables
from common.outbox import OutboxRelay, create_producer
from common.topics import partition_counts
from devstack.broker import AUTO_CREATE_PARTITIONS, EmbeddedBroker, ensure_topics
from devstack.postgres import EmbeddedPostgres
from devstack.testing import eventually, free_port


@pytest.fixture
def own_postgres(pg_data_dir: Path) -> Iterator[EmbeddedPostgres]:
    server = EmbeddedPostgres(pg_data_dir, free_port(), durable=False)
    server.start()
    server.ensure_databases(["outages"])
    yield server
    server.stop()


@pytest.fixture
async def engine(own_postgres: EmbeddedPostgres) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(own_postgres.dsn("outages"), pool_size=4)
    async with engine.begin() as conn:
        await conn.run_sync(create_infra_tables)
        await conn.run_sync(effects_metadata.create_all)
    yield engine
    await engine.dispose()


def _runner(bootstrap: str, engine: AsyncEngine) -> ConsumerRunner:
    # max_attempts=2 and a fast retry: an outage counted as attempts would park within a second.
    return ConsumerRunner(
        service=f"outages-{uuid.uuid4().hex[:6]}",
        bootstrap=bootstrap,
        sessions=create_session_factory(engine),
        handlers={"bookmark.saved": record_effect},
        max_attempts=2,
        retry_base_seconds=0.05,
    )


async def _count(engine: AsyncEngine, sql: str) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(text(sql))).scalar_one())


async def test_database_outage_during_consumption_parks_nothing(
    own_postgres: EmbeddedPostgres, engine: AsyncEngine, own_broker: EmbeddedBroker
) -> None:
    user = uuid.uuid4()
    consumer = _runner(own_broker.bootstrap, engine)
    task = asyncio.create_task(consumer.run())
    producer = create_producer(own_broker.bootstrap)
    await producer.start()
    try:
        first = saved(user, 1)
        await producer.send_and_wait(first.topic, first.model_dump_json().encode(), key=first.key.encode())
        await eventually(lambda: _has(engine, user, 1), timeout=60)

        await asyncio.to_thread(own_postgres.stop)
        for seq in range(2, 7):
            event = saved(user, seq)
            await producer.send_and_wait(event.topic, event.model_dump_json().encode(), key=event.key.encode())
        # Held up by the outage far longer than max_attempts x backoff would allow before parking.
        await asyncio.sleep(3.0)
        await asyncio.to_thread(own_postgres.start)

        applied = await eventually(lambda: _has(engine, user, 6), timeout=90)
        assert [seq for _, seq in applied] == [1, 2, 3, 4, 5, 6]
        assert await _count(engine, "SELECT count(*) FROM dead_letters") == 0
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await producer.stop()


async def test_events_lost_by_a_restarted_broker_are_republished(
    own_postgres: EmbeddedPostgres, engine: AsyncEngine, own_broker: EmbeddedBroker
) -> None:
    url = own_postgres.dsn("outages")
    user = uuid.uuid4()
    relay = OutboxRelay(
        service="outages",
        engine=engine,
        database_url=url,
        bootstrap=own_broker.bootstrap,
        poll_interval=0.2,
        log_check_interval=0.5,
    )
    async with running(relay.run()):
        await write_outbox(engine, [saved(user, seq) for seq in range(20)])
        await eventually(lambda: _all_published(engine), timeout=60)
        # The broker dies before any consumer read the events; it comes back empty (memory storage).
        await asyncio.to_thread(own_broker.stop)
        await asyncio.to_thread(own_broker.start)
        await ensure_topics(own_broker.bootstrap, TOPICS)
        await write_outbox(engine, [saved(user, 20)])
        async with running(_runner(own_broker.bootstrap, engine).run()):
            applied = await eventually(lambda: _has(engine, user, 21), timeout=90)
            assert sorted(seq for _, seq in applied) == list(range(21))


async def test_events_sent_before_the_stack_created_the_topics_reach_the_consumer(
    own_postgres: EmbeddedPostgres, engine: AsyncEngine, own_broker: EmbeddedBroker
) -> None:
    """A relay that reaches a restarted (empty) broker before the topics are created makes them by its
    sends, with the broker's own partition count, which is the one the stack creates them with. The
    stack's topic step then finds them as configured or creates what the broker does not list, deletes
    nothing, and every event reaches a consumer."""
    url = own_postgres.dsn("outages")
    users = [uuid.uuid4() for _ in range(24)]  # one event per user: the keys spread over every partition
    relay = OutboxRelay(
        service="outages",
        engine=engine,
        database_url=url,
        bootstrap=own_broker.bootstrap,
        poll_interval=0.2,
        log_check_interval=0.5,
    )
    async with running(relay.run()):
        await asyncio.to_thread(own_broker.stop)
        await write_outbox(engine, [saved(user, 1) for user in users])
        await asyncio.to_thread(own_broker.start)  # no topics: the relay's sends auto-create them
        await eventually(lambda: _all_published(engine), timeout=60)
        # The stack's topic step. The broker's listing of a topic a send made has been seen to lack it for
        # over 30 s; the step creates what is not listed, and the events must reach the consumer anyway.
        await ensure_topics(own_broker.bootstrap, TOPICS)
        # The count the stack's own check reads (one metadata request naming no topic).
        counts = await eventually(lambda: _listed(own_broker.bootstrap, "bookmark.saved"), timeout=30)
        assert counts["bookmark.saved"] == AUTO_CREATE_PARTITIONS
        async with running(_runner(own_broker.bootstrap, engine).run()):
            for user in users:
                assert await eventually(lambda u=user: _has(engine, u, 1), timeout=90)


@contextlib.asynccontextmanager
async def running(work: Coroutine[Any, Any, None]) -> AsyncIterator[None]:
    """Run ``work`` (a relay's or consumer's ``run()``) as a task for the block's duration."""
    task = asyncio.create_task(work)
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _has(engine: AsyncEngine, user: uuid.UUID, count: int) -> list[tuple[uuid.UUID, int]] | None:
    rows = await effects_of(engine, user)
    return rows if len({seq for _, seq in rows}) >= count else None


async def _listed(bootstrap: str, topic: str) -> dict[str, int] | None:
    counts = await partition_counts(bootstrap)
    return counts if topic in counts else None


async def _all_published(engine: AsyncEngine) -> bool:
    return await _count(engine, "SELECT count(*) FROM outbox WHERE published_at IS NULL") == 0


async def test_outage_failures_never_count_towards_parking(engine: AsyncEngine, own_broker: EmbeddedBroker) -> None:
    """A connection reset inside the handler (the database path failing transiently, many more times than
    max_attempts) is waited out; the same number of the handler's own failures parks the event."""
    user = uuid.uuid4()
    failures = {"reset": 6, "bug": 6}

    async def flaky(session: AsyncSession, event: BookmarkSaved) -> None:
        kind = {"1": "reset", "2": "bug"}.get(event.clientBookmarkId, "fine")
        if failures.get(kind, 0) > 0:
            failures[kind] -= 1
            if kind == "reset":
                raise ConnectionResetError(104, "Connection reset by peer")
            raise RuntimeError("the handler's own bug")
        await record_effect(session, event)

    consumer = ConsumerRunner(
        service=f"outages-{uuid.uuid4().hex[:6]}",
        bootstrap=own_broker.bootstrap,
        sessions=create_session_factory(engine),
        handlers={"bookmark.saved": flaky},
        max_attempts=2,
        retry_base_seconds=0.01,
    )
    task = asyncio.create_task(consumer.run())
    producer = create_producer(own_broker.bootstrap)
    await producer.start()
    try:
        for seq in (1, 2, 3):
            event = saved(user, seq)
            await producer.send_and_wait(event.topic, event.model_dump_json().encode(), key=event.key.encode())
        applied = await eventually(lambda: _has(engine, user, 2), timeout=60)
        assert sorted(seq for _, seq in applied) == [1, 3]
        assert await _count(engine, "SELECT count(*) FROM dead_letters") == 1
        assert "own bug" in await _scalar_text(engine, "SELECT error FROM dead_letters")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await producer.stop()


async def _scalar_text(engine: AsyncEngine, sql: str) -> str:
    async with engine.connect() as conn:
        return str((await conn.execute(text(sql))).scalar_one())


async def test_pooled_connections_a_database_restart_closed_never_reach_a_caller(
    own_postgres: EmbeddedPostgres, engine: AsyncEngine
) -> None:
    """Without a ping per checkout, the pool must still hand out only live connections after a restart."""

    async def query() -> int:
        async with engine.connect() as conn:
            await asyncio.sleep(0.05)  # hold it, so the concurrent calls use different connections
            return int((await conn.execute(text("SELECT 1"))).scalar_one())

    assert await asyncio.gather(*(query() for _ in range(4))) == [1] * 4
    assert engine.pool.checkedin() == 4  # type: ignore[attr-defined]
    await asyncio.to_thread(own_postgres.stop)
    await asyncio.to_thread(own_postgres.start)
    await asyncio.sleep(0.2)  # the pooled connections' sockets have been closed by the old server
    # Every pooled connection is stale; each call gets a fresh one instead of an error.
    assert await asyncio.gather(*(query() for _ in range(4))) == [1] * 4
