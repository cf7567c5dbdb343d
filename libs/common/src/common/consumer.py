"""Consumer runner (ARCHITECTURE.md, rule 2): idempotent handlers, offsets committed after the effect.

A fetched batch (per partition) is applied in ONE transaction: the event ids of the batch go into
``processed_events`` in one statement, and the handler of every id that was not there yet runs in the
same transaction; a redelivered event finds its id and is skipped. The Kafka offset (after the batch's
last record) is committed only after that transaction. If the batch transaction fails for any reason,
the batch is applied again one event per transaction, with the rules below, so one poisoned event
never holds up or parks its neighbours. An event a service declares it does not need (``filters``:
e.g. enrichment's projection and a title-only change) is skipped without a transaction. A topic may
also have a batch handler (``batch_handlers``): in the batch transaction it gets all of the batch's new
events at once, in order, so it can apply them in a few statements instead of a few per event; its
effect must equal the event handler's applied to each event in turn (the one-by-one fallback uses that).

A handler that keeps failing is retried with backoff and after ``max_attempts`` parked in
``dead_letters`` (metric ``events_dead_lettered_total``) so the partition moves
on; a message that does not parse is parked at once (retrying cannot fix it).

Only the handler's own failures on a healthy database count as attempts: a database outage
(:func:`common.outages.is_outage`, or any failure while the database does not answer ``SELECT 1``) is
retried without limit, with capped backoff, so an outage never sends valid events to the dead letters.
The runner's restart delay grows while it keeps failing and starts over after a healthy period.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias, TypeVar

from aiokafka import AIOKafkaConsumer, ConsumerRecord
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, SpanKind
from pydantic import ValidationError
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from common.db import SessionFactory, transaction
from common.events import AnyEvent, parse_event
from common.metrics import (
    CONSUMER_LAG,
    EVENTS_APPLIED_NEWEST,
    EVENTS_DEAD_LETTERED,
    EVENTS_PROCESSED,
    initialise_consumer_series,
)
from common.outages import is_outage
from common.outbox import start_with_retry
from common.retry import Backoff
from common.tracing import context_from_kafka_headers

log = logging.getLogger("common.consumer")

T = TypeVar("T")
Work: TypeAlias = tuple[ConsumerRecord[bytes, bytes], AnyEvent, "Handler"]  # noqa: UP040 - aiokafka generic

_INSERT_PROCESSED_MANY = text(
    "INSERT INTO processed_events (event_id, topic) "
    "SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:topics AS text[])) "
    "ON CONFLICT DO NOTHING RETURNING event_id"
)

Handler = Callable[[AsyncSession, Any], Awaitable[None]]
BatchHandler = Callable[[AsyncSession, Sequence[Any]], Awaitable[None]]
EventFilter = Callable[[Any], bool]

# How long a fetch may wait for data. Real Kafka answers a waiting fetch as soon as data arrives, so this
# only bounds idle polling; the embedded broker (Tansu) holds every fetch for its full wait, so it is also
# the delivery latency there, and every fetch costs CPU in the broker and the client.
# Only the gateway's nudges need low latency (see gateway.events.consumers); the services' consumers keep
# projections, enrichment results and plan changes, where a second or two is invisible, and poll rarely.
BACKGROUND_FETCH_MAX_WAIT_MS = 2_000
# aiokafka's background fetcher also wakes every ``consumer_timeout_ms`` (200 by default) to rebuild its
# fetch plan, although every event it acts on (a fetch answered, records consumed, a seek, an unassign)
# wakes it by itself. Those five wake-ups a second were most of an idle consumer's own CPU (about 1.7 ms/s
# each, measured with no fetch in flight; 0.1 ms/s with this value), so the timer is only a safety net.
FETCHER_SAFETY_WAKE_MS = 5_000
# A consumer that has read no record for IDLE_AFTER_SECONDS polls every IDLE_FETCH_MAX_WAIT_MS instead
# (FetchPace): at rest, the consumers' fetches are most of the stack's CPU, in the embedded broker above
# all (each fetch costs it about 0.1 ms per partition it names). There the first event after a quiet
# minute waits up to that long; Kafka answers it at once. The next events are back at the active wait.
IDLE_FETCH_MAX_WAIT_MS = 8_000
IDLE_AFTER_SECONDS = 60.0
# A topic created after we subscribed (fresh cluster, broker restarted with memory storage) is picked up
# at the next metadata refresh; aiokafka's default waits 5 minutes. Every refresh is a broker request and
# a parse here, so an idle consumer refreshes every 15 s. Failed requests refresh at once.
METADATA_MAX_AGE_MS = 15_000
# Backoff between retries of an event during an infrastructure outage (never parked): capped low enough
# that the consumer notices a recovered database within a few seconds.
OUTAGE_RETRY_CAP_SECONDS = 5.0
# Backoff between attempts of a handler that fails on a healthy database (it is parked after max_attempts).
HANDLER_RETRY_CAP_SECONDS = 30.0
# Restart delays of the runner itself: doubling from the first to the cap, back to the first after a run
# that stayed healthy this long.
RESTART_DELAY_FIRST, RESTART_DELAY_CAP, HEALTHY_RUN_SECONDS = 0.5, 10.0, 30.0


class FetchPace:
    """The fetch wait a consumer should use now: ``active_ms`` while it read records within the last
    ``idle_after`` seconds, ``idle_ms`` once it has been quiet that long."""

    def __init__(
        self,
        active_ms: int,
        *,
        idle_ms: int = IDLE_FETCH_MAX_WAIT_MS,
        idle_after: float = IDLE_AFTER_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.active_ms = active_ms
        self.idle_ms = max(idle_ms, active_ms)
        self.idle_after = idle_after
        self._clock = clock
        self._last_records = clock()

    def saw_records(self) -> None:
        self._last_records = self._clock()

    def wait_ms(self) -> int:
        quiet_for = self._clock() - self._last_records
        return self.active_ms if quiet_for < self.idle_after else self.idle_ms


def set_fetch_wait(consumer: AIOKafkaConsumer, wait_ms: int) -> None:
    """Give a running consumer another fetch wait, used from its next fetch request on.

    aiokafka fixes the wait at construction; its fetcher reads it for every request, so it is changed
    there (without that attribute, after an aiokafka change, the consumer keeps its first wait).
    """
    fetcher = getattr(consumer, "_fetcher", None)
    if fetcher is not None and getattr(fetcher, "_fetch_max_wait_ms", None) not in (None, wait_ms):
        fetcher._fetch_max_wait_ms = wait_ms


class ConsumerRunner:
    def __init__(
        self,
        *,
        service: str,
        bootstrap: str,
        sessions: SessionFactory,
        handlers: Mapping[str, Handler],
        group_id: str | None = None,
        max_attempts: int = 5,
        retry_base_seconds: float = 0.2,
        filters: Mapping[str, EventFilter] | None = None,
        fetch_max_wait_ms: int = BACKGROUND_FETCH_MAX_WAIT_MS,
        batch_handlers: Mapping[str, BatchHandler] | None = None,
    ) -> None:
        self.service = service
        self.bootstrap = bootstrap
        self.sessions = sessions
        self.handlers = dict(handlers)
        self.group_id = group_id or service
        self.max_attempts = max_attempts
        self.retry_base_seconds = retry_base_seconds
        self.filters = dict(filters or {})
        self.batch_handlers = dict(batch_handlers or {})
        self.pace = FetchPace(fetch_max_wait_ms)
        self.tracer = trace.get_tracer(f"{service}.consumer")
        self.started = asyncio.Event()
        self._applied_newest: dict[str, float] = {}
        initialise_consumer_series(service, self.handlers)

    async def run(self) -> None:
        backoff = restart_backoff()
        loop = asyncio.get_running_loop()
        await self._load_applied_gauges()
        while True:
            consumer = await start_with_retry(self._new_consumer, f"{self.service} consumer")
            started = loop.time()
            try:
                self.started.set()
                await self._consume(consumer)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                delay = next_restart_delay(backoff, healthy_for=loop.time() - started)
                log.warning("consumer restarting in %.1fs after error: %r", delay, exc, exc_info=exc)
                await backoff.sleep(delay)
            finally:
                with contextlib.suppress(Exception):
                    await consumer.stop()

    async def _load_applied_gauges(self) -> None:
        """Start the divergence gauges from what was applied before this process (best effort)."""
        try:
            async with self.sessions() as session:
                rows = await session.execute(
                    text(
                        "SELECT topic, EXTRACT(EPOCH FROM max(processed_at))::float8 AS newest "
                        "FROM processed_events GROUP BY topic"
                    )
                )
                for topic, newest in rows:
                    if topic in self.handlers:
                        self._applied_newest[topic] = newest
                        EVENTS_APPLIED_NEWEST.labels(self.service, topic).set(newest)
        except Exception as exc:  # the database may be away at start; the gauges fill as events apply
            log.warning("consumer could not load its applied positions: %s", type(exc).__name__)

    def _new_consumer(self) -> AIOKafkaConsumer:
        return AIOKafkaConsumer(
            *self.handlers,
            bootstrap_servers=self.bootstrap,
            group_id=self.group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=200,
            metadata_max_age_ms=METADATA_MAX_AGE_MS,
            fetch_max_wait_ms=self.pace.wait_ms(),
            consumer_timeout_ms=FETCHER_SAFETY_WAKE_MS,
        )

    async def _consume(self, consumer: AIOKafkaConsumer) -> None:
        while True:
            # getmany returns as soon as the background fetcher has records; the timeout only paces the
            # lag report of an idle consumer.
            wait_ms = self.pace.wait_ms()
            set_fetch_wait(consumer, wait_ms)
            batches = await consumer.getmany(timeout_ms=wait_ms + 3_000, max_records=200)
            if any(batches.values()):
                self.pace.saw_records()
            for tp, records in batches.items():
                if records:
                    await self.process_batch(records)
                    await consumer.commit({tp: records[-1].offset + 1})
            await self._report_lag(consumer)

    async def _report_lag(self, consumer: AIOKafkaConsumer) -> None:
        for tp in consumer.assignment():
            highwater = consumer.highwater(tp)
            if highwater is None:
                continue
            try:
                position = await consumer.position(tp)
            except Exception:  # noqa: S112 - partition revoked mid-loop; report it next round
                continue
            if highwater < position:
                # A log never shrinks: this broker lost it (restarted in-memory broker, re-created topic).
                # Some brokers answer a fetch past the end with nothing rather than OffsetOutOfRange, which
                # would stall this partition; rereading is safe (idempotent handlers).
                log.warning(
                    "%s[%d] ends at %d, before our position %d: rereading", tp.topic, tp.partition, highwater, position
                )
                await consumer.seek_to_beginning(tp)
                continue
            CONSUMER_LAG.labels(self.service, tp.topic, str(tp.partition)).set(highwater - position)

    async def process_batch(self, records: list[ConsumerRecord[bytes, bytes]]) -> None:
        """Apply the records of one partition in one transaction; one by one if that fails."""
        work: list[Work] = []
        for record in records:
            item = await self._prepare(record)
            if item is not None:
                work.append(item)
        if not work:
            return
        outcomes: list[str] | None = None
        try:
            outcomes = await self._apply_batch(work)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a poisoned event or an outage: the per-event rules sort it out
            log.info("batch of %d event(s) failed, applying them one by one: %r", len(work), exc)
        if outcomes is None:
            # Outside the except block: the events' own failures must not carry the batch's failure as
            # their context, or an outage seen by the batch would make a handler's bug look like one.
            for record, event, handler in work:
                await self._traced(record, event, self._apply_with_retries(record, event, handler))
            return
        for (record, event, _), outcome in zip(work, outcomes, strict=True):
            EVENTS_PROCESSED.labels(self.service, record.topic, outcome).inc()
            self._mark_applied(record.topic, event)

    async def process(self, record: ConsumerRecord[bytes, bytes]) -> None:
        """Apply one record exactly once (in effect), or park it."""
        item = await self._prepare(record)
        if item is not None:
            await self._traced(record, item[1], self._apply_with_retries(*item))

    async def _prepare(self, record: ConsumerRecord[bytes, bytes]) -> Work | None:
        """The parsed event and its handler; None when there is nothing to apply (parked, not ours,
        or filtered out by the service as not needed)."""
        try:
            event = parse_event(record.value or b"")
        except ValidationError as exc:
            await self._park(record, f"unparseable event: {exc}", attempts=1)
            return None
        handler = self.handlers.get(record.topic)
        if handler is None:
            return None
        wanted = self.filters.get(record.topic)
        if wanted is not None and not wanted(event):
            EVENTS_PROCESSED.labels(self.service, record.topic, "skipped").inc()
            return None
        return record, event, handler

    async def _traced(self, record: ConsumerRecord[bytes, bytes], event: AnyEvent, work: Awaitable[T]) -> T:
        """Run ``work`` in a consumer span that continues the producer's trace."""
        token = otel_context.attach(context_from_kafka_headers(record.headers))
        try:
            with self.tracer.start_as_current_span(f"consume {record.topic}", kind=SpanKind.CONSUMER) as span:
                span.set_attribute("messaging.destination.name", record.topic)
                span.set_attribute("messaging.message.id", str(event.eventId))
                return await work
        finally:
            otel_context.detach(token)

    async def _apply_batch(self, work: list[Work]) -> list[str]:
        """One transaction: every new event id recorded and its handler run; duplicates skipped."""
        outcomes: list[str] = []
        async with transaction(self.sessions) as session:
            inserted = await session.execute(
                _INSERT_PROCESSED_MANY,
                {"ids": [event.eventId for _, event, _ in work], "topics": [event.type for _, event, _ in work]},
            )
            fresh = set(inserted.scalars())
            to_apply: list[Work] = []
            for item in work:
                if item[1].eventId not in fresh:
                    outcomes.append("duplicate")
                    continue
                fresh.discard(item[1].eventId)  # the same event twice in one batch runs once
                to_apply.append(item)
                outcomes.append("applied")
            batch_handler = self.batch_handlers.get(work[0][0].topic)  # a batch is one partition's
            if batch_handler is not None and len(to_apply) > 1:
                await self._traced_batch(to_apply, batch_handler(session, [event for _, event, _ in to_apply]))
            else:
                for record, event, handler in to_apply:
                    await self._traced(record, event, handler(session, event))
        return outcomes

    async def _traced_batch(self, work: list[Work], applied: Awaitable[T]) -> T:
        """Run a batch handler in one consumer span linked to every producer's trace."""
        links = [
            Link(trace.get_current_span(context_from_kafka_headers(record.headers)).get_span_context())
            for record, _, _ in work
        ]
        topic = work[0][0].topic
        with self.tracer.start_as_current_span(f"consume {topic}", kind=SpanKind.CONSUMER, links=links) as span:
            span.set_attribute("messaging.destination.name", topic)
            span.set_attribute("messaging.batch.message_count", len(work))
            return await applied

    async def _apply_with_retries(
        self, record: ConsumerRecord[bytes, bytes], event: AnyEvent, handler: Handler
    ) -> None:
        attempt = outages = 0
        waits, failures = outage_backoff(self.retry_base_seconds), handler_backoff(self.retry_base_seconds)
        while True:
            try:
                outcome = await self._apply(event, handler)
                EVENTS_PROCESSED.labels(self.service, record.topic, outcome).inc()
                self._mark_applied(record.topic, event)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if await self._is_infrastructure_failure(exc):
                    outages += 1
                    EVENTS_PROCESSED.labels(self.service, record.topic, "retried").inc()
                    log.warning("event waits for the database", extra={"topic": record.topic, "retry": outages})
                    await waits.wait()
                    continue
                attempt += 1
                EVENTS_PROCESSED.labels(self.service, record.topic, "failed").inc()
                log.warning(
                    "handler failed",
                    extra={"topic": record.topic, "event_id": str(event.eventId), "attempt": attempt},
                    exc_info=exc,
                )
                if attempt >= self.max_attempts:
                    await self._park(record, f"{type(exc).__name__}: {exc}", attempts=attempt)
                    self._mark_applied(record.topic, event)
                    return
                await failures.wait()

    async def _is_infrastructure_failure(self, exc: Exception) -> bool:
        """An outage, or any failure while the database does not answer: not the handler's fault."""
        if is_outage(exc):
            return True
        try:
            async with self.sessions() as session:
                await session.execute(text("SELECT 1"))
        except Exception:
            return True
        return False

    def _mark_applied(self, topic: str, event: AnyEvent) -> None:
        newest = max(self._applied_newest.get(topic, 0.0), event.occurredAt.timestamp())
        self._applied_newest[topic] = newest
        EVENTS_APPLIED_NEWEST.labels(self.service, topic).set(newest)

    async def _apply(self, event: AnyEvent, handler: Handler) -> str:
        async with transaction(self.sessions) as session:
            inserted = await session.execute(
                text(
                    "INSERT INTO processed_events (event_id, topic) VALUES (:id, :topic) "
                    "ON CONFLICT DO NOTHING RETURNING event_id"
                ),
                {"id": event.eventId, "topic": event.type},
            )
            if inserted.first() is None:
                return "duplicate"
            await handler(session, event)
        return "applied"

    async def _park(self, record: ConsumerRecord[bytes, bytes], error: str, *, attempts: int) -> None:
        EVENTS_DEAD_LETTERED.labels(self.service, record.topic).inc()
        log.error("event parked in dead_letters", extra={"topic": record.topic, "offset": record.offset})
        async with transaction(self.sessions) as session:
            await session.execute(
                text(
                    'INSERT INTO dead_letters (topic, partition, "offset", key, payload, error, attempts) '
                    "VALUES (:topic, :partition, :offset, :key, :payload, :error, :attempts)"
                ),
                {
                    "topic": record.topic,
                    "partition": record.partition,
                    "offset": record.offset,
                    "key": record.key.decode(errors="replace") if record.key else None,
                    "payload": (record.value or b"").decode(errors="replace"),
                    "error": error[:4000],
                    "attempts": attempts,
                },
            )


def outage_backoff(base_seconds: float) -> Backoff:
    """The waits of an event held up by an outage: from ``base_seconds``, capped low enough that a
    recovered database is noticed within a few seconds."""
    return Backoff(first=base_seconds, cap=max(base_seconds, OUTAGE_RETRY_CAP_SECONDS))


def handler_backoff(base_seconds: float) -> Backoff:
    """The waits between attempts of a failing handler (bounded by ``max_attempts``, then parked)."""
    return Backoff(first=base_seconds, cap=max(base_seconds, HANDLER_RETRY_CAP_SECONDS))


def restart_backoff() -> Backoff:
    return Backoff(first=RESTART_DELAY_FIRST, cap=RESTART_DELAY_CAP)


def next_restart_delay(backoff: Backoff, *, healthy_for: float) -> float:
    """The runner's next restart delay: growing while it keeps failing, from the first again after a run
    that stayed healthy for ``HEALTHY_RUN_SECONDS``."""
    if healthy_for >= HEALTHY_RUN_SECONDS:
        backoff.reset()
    return backoff.next_delay()
