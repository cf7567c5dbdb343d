"""Transactional outbox (ARCHITECTURE.md, rule 1): events are rows written with the state change, and a
relay publishes them to Kafka.

The relay runs in every API process but only one per database publishes at a time: it holds a
PostgreSQL advisory lock on its LISTEN connection. One publisher reading rows in ``id`` order is what
keeps the events of one key (user) in order; if it dies the lock goes with its connection and a standby
takes over. It is woken by ``NOTIFY outbox`` (a trigger on insert) and polls every 5 s as a fallback
(a missed notification can only come with a lost connection, which restarts the relay anyway), keeps
retrying while the broker is down, and marks rows published only after the broker acknowledged them.
When the broker turns out to have lost acknowledged records (:mod:`common.broker_log`), the relay
re-publishes its retained window.

The relay's own commits (marking rows published, the retention cleanup) are asynchronous
(``synchronous_commit = off`` on its connection): a crash of PostgreSQL can forget the last marks, and the
relay then publishes those rows again, which idempotent consumers (ARCHITECTURE.md, rule 2) already absorb.
The one commit that un-marks rows (re-publishing after the broker lost records) stays synchronous.
The events themselves are written by the state change's own, synchronous commit. A drain whose batch held
every pending row takes two statements (read, mark) and no WAL flush of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import asyncpg
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import RecordMetadata
from sqlalchemy import Table, Text, bindparam, cast, func, insert, select, text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from common.broker_log import AckedLog
from common.db import asyncpg_dsn, deadlines_of
from common.events import PUBLISHED_TOPICS, Event
from common.metrics import (
    EVENTS_SOURCE_NEWEST,
    OUTBOX_OLDEST_AGE,
    OUTBOX_PENDING,
    OUTBOX_PUBLISHED,
    OUTBOX_REPUBLISHED,
    initialise_outbox_series,
)
from common.retry import Backoff
from common.tables import OutboxRow
from common.tasks import wait_for_event
from common.tracing import current_trace_headers, kafka_headers

log = logging.getLogger("common.outbox")

NOTIFY_CHANNEL = "outbox"
# Arbitrary constant: one advisory-lock id for "the outbox relay of this database".
RELAY_LOCK_ID = 7_311_500_001
# A wake-up that comes less than BUSY_WITHIN seconds after the previous drain began means writes are
# arriving faster than one at a time: the relay waits LINGER seconds so the next drain takes the rows
# of several writes at once (fewer bookmarks-database transactions per write, and less CPU per write
# across the stack under 16 concurrent writers). A quiet stack publishes at once.
BUSY_WITHIN = 0.05
LINGER = 0.005
# The relay's statements' deadline: longer than a request's (it runs no user's request, and its retention
# cleanup may delete many rows), bounded so that a database that stops answering ends in a restart of the
# relay rather than a wait without end.
RELAY_STATEMENT_TIMEOUT = 30.0


def _insert_statement() -> Any:
    """``INSERT INTO outbox … SELECT FROM unnest(:topics, :keys, :payloads) WITH ORDINALITY ORDER BY`` it: the
    events of one write in one statement (one NOTIFY, one executor run), their ids in the list's order."""
    outbox: Table = OutboxRow.__table__  # type: ignore[attr-defined]
    rows = (
        func.unnest(*(bindparam(n, type_=ARRAY(Text)) for n in ("topics", "keys", "payloads")))
        .table_valued("topic", "key", "payload", with_ordinality="n")
        .render_derived(name="e")
    )
    selected = select(
        rows.c.topic, rows.c.key, cast(rows.c.payload, JSONB), cast(bindparam("headers", type_=Text), JSONB)
    ).order_by(rows.c.n)
    return insert(outbox).from_select(["topic", "key", "payload", "headers"], selected)


_INSERT = _insert_statement()

# The relay's statements (on its own asyncpg connection, not a session).
_PENDING = (
    "SELECT id, topic, key, payload::text AS payload, headers::text AS headers, "
    "EXTRACT(EPOCH FROM created_at)::float8 AS created, "
    "GREATEST(EXTRACT(EPOCH FROM clock_timestamp() - created_at), 0)::float8 AS age "
    "FROM outbox WHERE published_at IS NULL ORDER BY id LIMIT $1"
)
_PENDING_STATS = (
    "SELECT count(*) AS pending, "
    "COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(created_at)), 0) AS age "
    "FROM outbox WHERE published_at IS NULL"
)
_MARK_PUBLISHED = "UPDATE outbox SET published_at = clock_timestamp() WHERE id = ANY($1::bigint[])"
_MARK_ALL_UNPUBLISHED = "UPDATE outbox SET published_at = NULL WHERE published_at IS NOT NULL"


async def add_event(session: AsyncSession, event: Event) -> None:
    """Write ``event`` to the outbox inside the caller's transaction (never publish directly)."""
    await add_events(session, [event])


async def add_events(session: AsyncSession, events: list[Event]) -> None:
    if not events:
        return
    await session.execute(
        _INSERT,
        {
            "topics": [e.topic for e in events],
            "keys": [e.key for e in events],
            "payloads": [e.model_dump_json() for e in events],
            "headers": json.dumps(current_trace_headers()),
        },
    )


async def forget_published_events(session: AsyncSession, *, key: str) -> None:
    """Drop already-published outbox rows of one key (a purged user): their payloads are personal data
    that would otherwise linger until the retention cleanup. Unpublished rows still go out."""
    await session.execute(text("DELETE FROM outbox WHERE key = :k AND published_at IS NOT NULL"), {"k": key})


async def mark_retained_unpublished(conn: asyncpg.Connection) -> int:
    """Mark every retained outbox row for sending again (the broker lost what it had acknowledged); the
    count. The commit waits for its WAL flush: forgetting it in a crash would leave rows marked published
    that the broker no longer has, and nothing would send them again."""
    async with conn.transaction():
        await conn.execute("SET LOCAL synchronous_commit = on")
        status = await conn.execute(_MARK_ALL_UNPUBLISHED)
    return int(status.rsplit(" ", 1)[-1])


async def republish_retained(database_url: str) -> int:
    """:func:`mark_retained_unpublished` on a database of its own connection: what a supervisor runs for
    each service database when it replaces the broker with an empty one, before the services start
    (their relays then send the window to the new broker as to any other)."""
    conn = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        return await mark_retained_unpublished(conn)
    finally:
        await conn.close()


def create_producer(bootstrap: str) -> AIOKafkaProducer:
    # Tansu (local broker) does not support the idempotent producer; ordering per key comes from the
    # single relay sending in id order and marking only an acknowledged prefix.
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=False,
        linger_ms=2,
        request_timeout_ms=10_000,
        retry_backoff_ms=200,
    )


ClientT = TypeVar("ClientT", AIOKafkaProducer, AIOKafkaConsumer)


async def start_with_retry(factory: Callable[[], ClientT], what: str) -> ClientT:
    """Build and start an aiokafka client, retrying with capped backoff while the broker is unreachable.

    A fresh client per attempt: aiokafka clients cannot be started again once stopped, and a half-started
    consumer left behind would linger in its group as a ghost member and slow every rebalance.
    """
    backoff = Backoff(first=0.2, cap=5.0)
    while True:
        client = factory()
        try:
            await client.start()
            return client
        except Exception as exc:  # broker down: keep trying, the outbox keeps the events safe
            log.warning("%s cannot reach the broker yet: %s", what, exc)
            with contextlib.suppress(Exception):
                await client.stop()
            await backoff.wait()


class BrokerLogLost(Exception):
    """The broker lost records it had acknowledged: the retained window was marked for re-publishing and
    the relay starts over with a new producer. The old one's metadata may still name partitions of a topic
    that was re-created with fewer of them, and the embedded broker acknowledges sends to such a ghost
    partition that no consumer ever reads (measured with Tansu 0.6)."""


class OutboxRelay:
    def __init__(
        self,
        *,
        service: str,
        engine: AsyncEngine,
        database_url: str,
        bootstrap: str,
        batch_size: int = 500,
        poll_interval: float = 5.0,
        retention_seconds: int = 3600,
        log_check_interval: float = 15.0,
    ) -> None:
        self.service = service
        self.engine = engine
        self.dsn = asyncpg_dsn(database_url)
        self.bootstrap = bootstrap
        self.batch_size = batch_size
        self.poll_interval = poll_interval
        self.retention_seconds = retention_seconds
        self.log_check_interval = log_check_interval
        self.deadlines = deadlines_of(engine)
        self._wake = asyncio.Event()
        self._log = AckedLog()
        self.is_leader = False
        initialise_outbox_series(service, PUBLISHED_TOPICS.get(service, ()))

    async def run(self) -> None:
        """Publish forever (until cancelled); survives database and broker outages, including a database
        that stops answering (its statements run out of time and the relay starts over, backing off)."""
        backoff = Backoff(first=0.5, cap=10.0)
        while True:
            try:
                await self._lead()
                backoff.reset()
            except asyncio.CancelledError:
                raise
            except BrokerLogLost as exc:
                log.warning("outbox relay starts over with a new producer: %s", exc)
                backoff.reset()
            except Exception as exc:
                log.warning("outbox relay restarting after error: %r", exc)
                self.is_leader = False
                await backoff.wait()

    async def connect(self) -> asyncpg.Connection:
        """The relay's connection: its commits only mark rows published, so they need not wait for a WAL
        flush (see the module doc). Connecting has the database's connect deadline; each statement
        ``RELAY_STATEMENT_TIMEOUT`` (the retention cleanup and a re-publish may touch many rows)."""
        return await asyncpg.connect(
            self.dsn,
            server_settings={"synchronous_commit": "off"},
            timeout=self.deadlines.connect,
            command_timeout=max(self.deadlines.statement, RELAY_STATEMENT_TIMEOUT),
        )

    async def _lead(self) -> None:
        conn = await self.connect()
        producer: AIOKafkaProducer | None = None
        checker: AIOKafkaConsumer | None = None
        try:
            # Standby replicas poll for the lock; there is no event to wait on across processes.
            while not await conn.fetchval("SELECT pg_try_advisory_lock($1)", RELAY_LOCK_ID):  # noqa: ASYNC110
                await asyncio.sleep(2.0)
            self.is_leader = True
            await conn.add_listener(NOTIFY_CHANNEL, lambda *_: self._wake.set())
            await self._load_source_gauges(conn)
            producer = await start_with_retry(lambda: create_producer(self.bootstrap), f"{self.service} outbox relay")
            checker = await start_with_retry(self._log_checker, f"{self.service} outbox log check")
            last_cleanup = last_check = 0.0
            loop = asyncio.get_running_loop()
            while True:
                self._wake.clear()
                if loop.time() - last_check >= self.log_check_interval:
                    if lost := await self._log.check(checker):
                        lost_names = ", ".join(f"{tp.topic}[{tp.partition}]" for tp in lost)
                        await self._republish(conn, f"the broker no longer has what it acknowledged on {lost_names}")
                    last_check = loop.time()
                drained_at = loop.time()
                await self._drain(conn, producer)
                if loop.time() - last_cleanup > 60:
                    await conn.execute(
                        "DELETE FROM outbox WHERE published_at < now() - make_interval(secs => $1)",
                        float(self.retention_seconds),
                    )
                    last_cleanup = loop.time()
                await wait_for_event(self._wake, self.poll_interval)
                if linger := linger_after_wake(loop.time() - drained_at):
                    await asyncio.sleep(linger)
        finally:
            self.is_leader = False
            self._log.forget()
            if producer is not None:
                await producer.stop()
            if checker is not None:
                with contextlib.suppress(Exception):
                    await checker.stop()
            with contextlib.suppress(Exception):  # a server that does not answer the goodbye: dropped at once
                await conn.close(timeout=self.deadlines.connect)

    def _log_checker(self) -> AIOKafkaConsumer:
        # No group: it only asks for end offsets, it never consumes or commits.
        return AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None, enable_auto_commit=False)

    async def _republish(self, conn: asyncpg.Connection, why: str) -> None:
        """Mark the whole retained window for sending again, in id order (consumers are idempotent), and
        raise :class:`BrokerLogLost`: a new producer sends it."""
        count = await mark_retained_unpublished(conn)
        self._log.forget()
        OUTBOX_REPUBLISHED.labels(self.service).inc(count)
        log.warning("outbox relay re-publishes %d retained event(s): %s", count, why)
        raise BrokerLogLost(why)

    async def _load_source_gauges(self, conn: asyncpg.Connection) -> None:
        rows = await conn.fetch(
            "SELECT topic, EXTRACT(EPOCH FROM max(created_at))::float8 AS newest "
            "FROM outbox WHERE published_at IS NOT NULL GROUP BY topic"
        )
        for row in rows:
            EVENTS_SOURCE_NEWEST.labels(self.service, row["topic"]).set(row["newest"])

    async def _drain(self, conn: asyncpg.Connection, producer: AIOKafkaProducer) -> None:
        """Publish pending rows in id order until none is left. A batch shorter than ``batch_size`` held
        every row pending when it was read; one committed since has sent a ``NOTIFY`` that sets the wake-up
        again, so the drain stops without reading an empty batch."""
        backoff = Backoff(first=0.2, cap=5.0)
        while True:
            rows = await conn.fetch(_PENDING, self.batch_size)
            await self._update_gauges(conn, rows)
            if not rows:
                return
            acks = await self._publish(producer, rows)
            delivered = len(acks)
            if delivered:
                await conn.execute(_MARK_PUBLISHED, [r["id"] for r in rows[:delivered]])
                self._mark_source(rows[:delivered])
                if not self._log.record(acks):
                    await self._republish(conn, "the broker acknowledged an offset it had acknowledged before")
            if delivered < len(rows):
                await backoff.wait()
            elif len(rows) < self.batch_size:
                return
            else:
                backoff.reset()

    def _mark_source(self, rows: list[asyncpg.Record]) -> None:
        for row in rows:
            EVENTS_SOURCE_NEWEST.labels(self.service, row["topic"]).set(row["created"])

    async def _publish(self, producer: AIOKafkaProducer, rows: list[asyncpg.Record]) -> list[RecordMetadata]:
        """Send rows in order; return the broker's acknowledgements of the leading rows it accepted."""
        futures = []
        try:
            for row in rows:
                carrier = json.loads(row["headers"])
                futures.append(
                    await producer.send(
                        row["topic"],
                        value=row["payload"].encode(),
                        key=row["key"].encode(),
                        headers=kafka_headers(carrier),
                    )
                )
        except Exception as exc:
            log.warning("outbox publish failed to enqueue: %r", exc)
        results = await asyncio.gather(*futures, return_exceptions=True)
        acks: list[RecordMetadata] = []
        for row, result in zip(rows, results, strict=False):
            if isinstance(result, BaseException):
                log.warning("outbox publish of %s failed: %s", row["topic"], result)
                break
            OUTBOX_PUBLISHED.labels(self.service, row["topic"]).inc()
            acks.append(result)
        return acks

    async def _update_gauges(self, conn: asyncpg.Connection, batch: list[asyncpg.Record]) -> None:
        known = gauges_of_batch([r["age"] for r in batch], self.batch_size)
        if known is None:
            stats = await conn.fetchrow(_PENDING_STATS)
            known = (stats["pending"], float(stats["age"])) if stats is not None else (0, 0.0)
        OUTBOX_PENDING.labels(self.service).set(known[0])
        OUTBOX_OLDEST_AGE.labels(self.service).set(known[1])


def linger_after_wake(since_drain: float) -> float:
    """How long the relay waits after a wake-up, ``since_drain`` seconds after its previous drain began."""
    return LINGER if since_drain < BUSY_WITHIN else 0.0


def gauges_of_batch(ages: list[float], batch_size: int) -> tuple[int, float] | None:
    """The pending count and the oldest pending row's age when a batch of rows with these ages, read with
    ``LIMIT batch_size``, held every pending row (it is shorter than the limit); None when it may not
    have, and the database must be asked (one query less per drain in the common case)."""
    if len(ages) >= batch_size:
        return None
    return len(ages), max(ages, default=0.0)
