"""The event plumbing against a real PostgreSQL and a real broker:
outbox delivery across a broker outage, exactly-once effects under redelivery, per-key order, and poison
events parked without blocking the partition."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import plumbing_support as support
import pytest
from aiokafka import AIOKafkaConsumer
from plumbing_support import effects_metadata, effects_of, saved, write_outbox
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from common.consumer import ConsumerRunner
from common.db import create_engine, create_session_factory
from common.events import TOPICS, BookmarkSaved
from common.outbox import OutboxRelay, create_producer
from common.tables import INFRA_TABLES
from devstack.broker import EmbeddedBroker, ensure_topics
from devstack.testing import eventually


@pytest.fixture
async def scratch_db(infra: Any) -> AsyncIterator[tuple[str, AsyncEngine]]:
    name = f"plumbing_{uuid.uuid4().hex[:8]}"
    infra.postgres.ensure_databases([name])
    url = infra.postgres.dsn(name)
    engine = create_engine(url, pool_size=4)
    from common.migrations import create_infra_tables

    async with engine.begin() as conn:
        await conn.run_sync(create_infra_tables)
        await conn.run_sync(effects_metadata.create_all)
    yield url, engine
    await engine.dispose()


async def record_effect(session: AsyncSession, event: BookmarkSaved) -> None:
    if event.clientBookmarkId == "boom":
        raise RuntimeError("handler cannot process this event")
    await support.record_effect(session, event)


def runner(bootstrap: str, engine: AsyncEngine) -> ConsumerRunner:
    return ConsumerRunner(
        service=f"plumbing-{uuid.uuid4().hex[:6]}",
        bootstrap=bootstrap,
        sessions=create_session_factory(engine),
        handlers={"bookmark.saved": record_effect},
        max_attempts=3,
        retry_base_seconds=0.05,
    )


async def test_event_written_while_broker_is_down_is_delivered_once_it_is_back(
    scratch_db: tuple[str, AsyncEngine], own_broker: EmbeddedBroker
) -> None:
    url, engine = scratch_db
    user = uuid.uuid4()
    own_broker.stop()
    await write_outbox(engine, [saved(user, 1)])
    relay = OutboxRelay(
        service="plumbing", engine=engine, database_url=url, bootstrap=own_broker.bootstrap, poll_interval=0.2
    )
    consumer = runner(own_broker.bootstrap, engine)
    tasks = [asyncio.create_task(relay.run()), asyncio.create_task(consumer.run())]
    try:
        await eventually(lambda: _is_leader(relay))
        await asyncio.sleep(1.0)  # the relay is retrying against a dead broker meanwhile
        async with engine.connect() as conn:
            pending = (await conn.execute(text("SELECT count(*) FROM outbox WHERE published_at IS NULL"))).scalar()
        assert pending == 1
        assert await effects_of(engine, user) == []

        await asyncio.to_thread(own_broker.start)
        await ensure_topics(own_broker.bootstrap, TOPICS)
        delivered = await eventually(lambda: effects_of(engine, user), timeout=60)
        assert [seq for _, seq in delivered] == [1]

        async def published() -> bool:
            async with engine.connect() as conn:
                return (
                    await conn.execute(text("SELECT count(*) FROM outbox WHERE published_at IS NULL"))
                ).scalar() == 0

        await eventually(published)
        await asyncio.sleep(0.5)
        assert len(await effects_of(engine, user)) == 1
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _is_leader(relay: OutboxRelay) -> bool:
    return relay.is_leader


async def test_redelivered_event_is_applied_once(
    scratch_db: tuple[str, AsyncEngine], own_broker: EmbeddedBroker
) -> None:
    _, engine = scratch_db
    user = uuid.uuid4()
    event = saved(user, 7)
    producer = create_producer(own_broker.bootstrap)
    await producer.start()
    consumer = runner(own_broker.bootstrap, engine)
    task = asyncio.create_task(consumer.run())
    try:
        for _ in range(3):
            await producer.send_and_wait(event.topic, event.model_dump_json().encode(), key=event.key.encode())
        follow_up = saved(user, 8)
        await producer.send_and_wait(follow_up.topic, follow_up.model_dump_json().encode(), key=follow_up.key.encode())
        applied = await eventually(lambda: _has(engine, user, 2))
        assert [seq for _, seq in applied] == [7, 8]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await producer.stop()


async def _has(engine: AsyncEngine, user: uuid.UUID, count: int) -> list[tuple[uuid.UUID, int]] | None:
    rows = await effects_of(engine, user)
    return rows if len(rows) >= count else None


async def test_events_of_one_key_arrive_in_order(
    scratch_db: tuple[str, AsyncEngine], own_broker: EmbeddedBroker
) -> None:
    url, engine = scratch_db
    users = [uuid.uuid4() for _ in range(3)]
    # Interleaved across users and spread over many transactions, like real traffic.
    for start in range(0, 60, 6):
        await write_outbox(engine, [saved(u, seq) for seq in range(start, start + 6) for u in users])
    relay = OutboxRelay(
        service="plumbing", engine=engine, database_url=url, bootstrap=own_broker.bootstrap, batch_size=25
    )
    consumer = runner(own_broker.bootstrap, engine)
    tasks = [asyncio.create_task(relay.run()), asyncio.create_task(consumer.run())]
    try:
        await _each_applied_in_order(engine, users, 60)
    finally:
        await _stop(tasks)


async def _each_applied_in_order(engine: AsyncEngine, users: list[uuid.UUID], count: int) -> None:
    for user in users:
        applied = await eventually(lambda u=user: _has(engine, u, count), timeout=60)
        assert [seq for _, seq in applied] == list(range(count))


async def _stop(tasks: list[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_events_committed_while_the_relay_publishes_are_not_left_behind(
    scratch_db: tuple[str, AsyncEngine], own_broker: EmbeddedBroker
) -> None:
    """A drain stops after a batch shorter than its limit without reading again: rows committed
    meanwhile must be published on the wake-up their NOTIFY sets. Four writers commit one event at a time
    while the relay runs, so commits keep landing during its reads and publishes."""
    url, engine = scratch_db
    users = [uuid.uuid4() for _ in range(4)]
    relay = OutboxRelay(service="plumbing", engine=engine, database_url=url, bootstrap=own_broker.bootstrap)
    consumer = runner(own_broker.bootstrap, engine)
    tasks = [asyncio.create_task(relay.run()), asyncio.create_task(consumer.run())]

    async def writer(user: uuid.UUID) -> None:
        for seq in range(40):
            await write_outbox(engine, [saved(user, seq)])

    try:
        await eventually(lambda: _is_leader(relay))
        await asyncio.gather(*(writer(u) for u in users))
        await _each_applied_in_order(engine, users, 40)
        async with engine.connect() as conn:
            left = await conn.scalar(text("SELECT count(*) FROM outbox WHERE published_at IS NULL"))
        assert left == 0
    finally:
        await _stop(tasks)


async def test_the_relay_commits_its_marks_without_waiting_for_a_wal_flush(
    scratch_db: tuple[str, AsyncEngine], own_broker: EmbeddedBroker
) -> None:
    url, engine = scratch_db
    # The test server runs without durability; this database gets production's default back, so the
    # relay's own setting is what the assertion sees.
    async with engine.connect() as conn:
        await conn.execute(text(f"ALTER DATABASE {engine.url.database} SET synchronous_commit = on"))
        await conn.commit()
    relay = OutboxRelay(service="plumbing", engine=engine, database_url=url, bootstrap=own_broker.bootstrap)
    relay_conn = await relay.connect()
    try:
        assert await relay_conn.fetchval("SHOW synchronous_commit") == "off"
    finally:
        await relay_conn.close()
    await engine.dispose()  # new pooled connections read the database's setting
    async with engine.connect() as conn:  # the services' own writes keep the durable default
        assert await conn.scalar(text("SHOW synchronous_commit")) == "on"


async def test_poison_events_are_parked_and_the_partition_moves_on(
    scratch_db: tuple[str, AsyncEngine], own_broker: EmbeddedBroker
) -> None:
    _, engine = scratch_db
    user = uuid.uuid4()
    producer = create_producer(own_broker.bootstrap)
    await producer.start()
    consumer = runner(own_broker.bootstrap, engine)
    task = asyncio.create_task(consumer.run())
    try:
        key = str(user).encode()
        await producer.send_and_wait("bookmark.saved", b"{not json", key=key)
        failing = saved(user, "boom")
        await producer.send_and_wait("bookmark.saved", failing.model_dump_json().encode(), key=key)
        good = saved(user, 42)
        await producer.send_and_wait("bookmark.saved", good.model_dump_json().encode(), key=key)

        applied = await eventually(lambda: _has(engine, user, 1), timeout=30)
        assert [seq for _, seq in applied] == [42]
        async with engine.connect() as conn:
            parked = (await conn.execute(text("SELECT payload, error, attempts FROM dead_letters ORDER BY id"))).all()
        assert len(parked) == 2
        assert parked[0].payload == "{not json" and parked[0].attempts == 1
        assert "handler cannot process" in parked[1].error and parked[1].attempts == 3
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await producer.stop()


async def test_infra_tables_exist(scratch_db: tuple[str, AsyncEngine]) -> None:
    _, engine = scratch_db
    async with engine.connect() as conn:
        names = {r[0] for r in await conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname='public'"))}
    assert {t.name for t in INFRA_TABLES} <= names


async def _send_all(bootstrap: str, events: list[BookmarkSaved | bytes], key: bytes) -> None:
    producer = create_producer(bootstrap)
    await producer.start()
    try:
        for event in events:
            value = event if isinstance(event, bytes) else event.model_dump_json().encode()
            await producer.send_and_wait("bookmark.saved", value, key=key)
    finally:
        await producer.stop()


async def _transactions_of(engine: AsyncEngine, user: uuid.UUID) -> int:
    """How many transactions wrote the effects of ``user`` (rows of one transaction share xmin)."""
    async with engine.connect() as conn:
        return int(
            (
                await conn.execute(
                    text("SELECT count(DISTINCT xmin::text) FROM effects WHERE user_id = :u"), {"u": str(user)}
                )
            ).scalar_one()
        )


async def test_a_fetched_batch_is_applied_in_one_transaction_with_its_event_ids(
    scratch_db: tuple[str, AsyncEngine], own_broker: EmbeddedBroker
) -> None:
    """Issue 15: one transaction per fetched batch, effects and processed_events ids together."""
    _, engine = scratch_db
    user = uuid.uuid4()
    events = [saved(user, seq) for seq in range(40)]
    await _send_all(own_broker.bootstrap, [*events, events[3]], key=str(user).encode())  # one redelivered
    consumer = runner(own_broker.bootstrap, engine)  # started after: the first fetch holds every record
    task = asyncio.create_task(consumer.run())
    try:
        applied = await eventually(lambda: _has(engine, user, 40), timeout=60)
        assert [seq for _, seq in applied] == list(range(40))
        assert await _transactions_of(engine, user) < 40  # per-event transactions would give 40
        async with engine.connect() as conn:
            same_tx = (
                await conn.execute(
                    text(
                        "SELECT count(*) FROM effects e JOIN processed_events p ON p.event_id = e.event_id "
                        "WHERE e.user_id = :u AND e.xmin::text = p.xmin::text"
                    ),
                    {"u": str(user)},
                )
            ).scalar_one()
        assert same_tx == 40
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_poisoned_event_in_a_batch_parks_alone_and_its_neighbours_apply(
    scratch_db: tuple[str, AsyncEngine], own_broker: EmbeddedBroker
) -> None:
    _, engine = scratch_db
    user = uuid.uuid4()
    batch: list[BookmarkSaved | bytes] = [saved(user, 1), saved(user, 2), saved(user, "boom"), saved(user, 3)]
    await _send_all(own_broker.bootstrap, batch, key=str(user).encode())
    consumer = runner(own_broker.bootstrap, engine)
    task = asyncio.create_task(consumer.run())
    try:
        applied = await eventually(lambda: _has(engine, user, 3), timeout=60)
        assert [seq for _, seq in applied] == [1, 2, 3]
        async with engine.connect() as conn:
            parked = (await conn.execute(text("SELECT error, attempts FROM dead_letters"))).all()
        assert len(parked) == 1 and "handler cannot process" in parked[0].error and parked[0].attempts == 3
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_events_a_filter_declines_are_skipped_without_a_transaction(
    scratch_db: tuple[str, AsyncEngine], own_broker: EmbeddedBroker
) -> None:
    _, engine = scratch_db
    user = uuid.uuid4()
    await _send_all(own_broker.bootstrap, [saved(user, n) for n in range(1, 7)], key=str(user).encode())
    consumer = ConsumerRunner(
        service=f"plumbing-{uuid.uuid4().hex[:6]}",
        bootstrap=own_broker.bootstrap,
        sessions=create_session_factory(engine),
        handlers={"bookmark.saved": record_effect},
        filters={"bookmark.saved": lambda e: int(e.clientBookmarkId) % 2 == 0},
    )
    task = asyncio.create_task(consumer.run())
    try:
        applied = await eventually(lambda: _has(engine, user, 3), timeout=60)
        assert [seq for _, seq in applied] == [2, 4, 6]
        async with engine.connect() as conn:
            recorded = (await conn.execute(text("SELECT count(*) FROM processed_events"))).scalar_one()
        assert recorded == 3
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_batch_handler_gets_a_batch_s_new_events_at_once_in_order_and_falls_back_to_one_by_one(
    scratch_db: tuple[str, AsyncEngine], own_broker: EmbeddedBroker
) -> None:
    """``batch_handlers``: one call with the batch's new events (a redelivered one left out), in the batch's
    transaction; if it fails, the events go one by one through the event handler (a poisoned one parks)."""
    _, engine = scratch_db
    user = uuid.uuid4()
    events: list[BookmarkSaved | bytes] = [saved(user, seq) for seq in range(30)]
    await _send_all(
        own_broker.bootstrap, [*events, events[3], saved(user, "boom"), saved(user, 30)], key=str(user).encode()
    )
    sizes: list[int] = []

    async def record_many(session: AsyncSession, batch: Sequence[BookmarkSaved]) -> None:
        sizes.append(len(batch))
        for event in batch:
            await record_effect(session, event)

    consumer = ConsumerRunner(
        service=f"plumbing-{uuid.uuid4().hex[:6]}",
        bootstrap=own_broker.bootstrap,
        sessions=create_session_factory(engine),
        handlers={"bookmark.saved": record_effect},
        batch_handlers={"bookmark.saved": record_many},
        max_attempts=2,
        retry_base_seconds=0.05,
    )
    task = asyncio.create_task(consumer.run())
    try:
        applied = await eventually(lambda: _has(engine, user, 31), timeout=60)
        assert [seq for _, seq in applied] == list(range(31))
        assert sizes and max(sizes) > 1  # the batch handler did get several events at once
        async with engine.connect() as conn:
            parked = (await conn.execute(text("SELECT count(*) FROM dead_letters"))).scalar_one()
        assert parked == 1  # "boom", alone
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_quiet_consumer_polls_at_the_idle_wait_and_an_event_brings_the_active_wait_back(
    scratch_db: tuple[str, AsyncEngine], own_broker: EmbeddedBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FetchPace on a running consumer: its fetcher's wait (the attribute aiokafka reads for every fetch
    request) is the idle one after a quiet spell, and the active one again once an event was read."""
    from common.consumer import FetchPace

    _, engine = scratch_db
    user = uuid.uuid4()
    consumer = runner(own_broker.bootstrap, engine)
    consumer.pace = FetchPace(200, idle_ms=1_500, idle_after=1.0)
    waits: list[int] = []
    real_getmany = AIOKafkaConsumer.getmany

    async def recording_getmany(self: AIOKafkaConsumer, *args: Any, **kwargs: Any) -> Any:
        waits.append(int(self._fetcher._fetch_max_wait_ms))
        return await real_getmany(self, *args, **kwargs)

    monkeypatch.setattr(AIOKafkaConsumer, "getmany", recording_getmany)
    task = asyncio.create_task(consumer.run())
    try:
        await eventually(lambda: _true(1_500 in waits), timeout=30)
        quiet = len(waits)
        assert set(waits[waits.index(1_500) :]) == {1_500}  # no event: it stays at the idle wait
        await _send_all(own_broker.bootstrap, [saved(user, 1)], key=str(user).encode())
        await eventually(lambda: _has(engine, user, 1), timeout=30)
        await eventually(lambda: _true(200 in waits[quiet:]), timeout=30)  # the event brought it back
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _true(value: bool) -> bool:
    return value
