"""The Kafka tail: every replica reads whole topics itself (no consumer group, nothing committed).

A consumer group would split partitions between replicas, but each replica needs every event: its
nudges go to the sockets it holds, and its deny-list must know every deleted user. So the
:class:`TopicTail` assigns all partitions of its topics to itself and keeps positions in memory. One tail
reads both the bookmark topics (nudges) and the account topics (deny-list), each with its own handler:
every consumer's fetches cost the embedded broker CPU whether or not they find data.

Start positions: a topic without a lookback (the nudge topics) starts at the end offsets read at
start-up (only changes after the gateway started matter to sockets that connect after it); a topic with
one (the deny-list's) starts at the offsets for ``now - lookback`` (``offsets_for_times``) so that
deletions of still-valid tokens are known again after a restart. A broker that ignores the timestamp
just replays more; entries older than the lookback are discarded by the deny-list itself. After a
consumer error the tail resumes from the positions it had reached. A log that is no longer the one the
tail was reading (a restarted in-memory broker, a re-created topic, retention past our position) is
reread from its start, see :meth:`TopicTail._probe`: replaying is harmless (nudges coalesce, deny-list
entries are idempotent).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TypeAlias

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from pydantic import ValidationError

from common.consumer import BACKGROUND_FETCH_MAX_WAIT_MS, FETCHER_SAFETY_WAKE_MS, FetchPace, set_fetch_wait
from common.events import (
    BookmarkDeleted,
    BookmarkSaved,
    CollectionChanged,
    HighlightChanged,
    UserDeleted,
    UserMerged,
    parse_event,
)
from common.metrics import CONSUMER_LAG, EVENTS_PROCESSED, initialise_consumer_series
from common.outbox import start_with_retry
from common.retry import Backoff

log = logging.getLogger("gateway.events")

SERVICE = "gateway"
Record: TypeAlias = ConsumerRecord[bytes, bytes]  # noqa: UP040 - aiokafka's generic is not PEP 695-ready
# A handler says what it did with a record: "applied", or "skipped" when it had nothing to do.
RecordHandler = Callable[[Record], str]
APPLIED, SKIPPED = "applied", "skipped"

# Nudges are the one delivery that needs low latency (write → bookmarks_changed p50 ≤ 50 ms, p99 ≤
# 250 ms). The embedded broker holds each fetch for its full wait even when data arrives, so the wait is
# both the delivery delay (uniform in 0..wait) and the poll rate (1000 / wait fetches per second, each
# costing CPU in the broker and here). So the tail polls fast only while this replica holds a socket (a
# nudge can reach someone); with none it polls every 2 s, or at the idle pace of every consumer after a
# quiet minute (common.consumer.FetchPace), and skips nothing (positions still advance); the first nudge
# after the first socket connects waits at most that one wait. Deny-list events ride along:
# the replica that answered ``DELETE /v1/account`` or a merging link denies the caller before the event.
# Real Kafka answers a waiting fetch when data arrives, so there the wait only bounds idle polling.
NUDGE_FETCH_MAX_WAIT_MS = 25
NUDGE_IDLE_FETCH_MAX_WAIT_MS = 2_000


class TopicTail:
    def __init__(
        self,
        *,
        name: str,
        bootstrap: str,
        handlers: Mapping[str, RecordHandler],
        lookback_seconds: Mapping[str, float] | None = None,
        probe_seconds: float = 5.0,
        fetch_max_wait_ms: int = BACKGROUND_FETCH_MAX_WAIT_MS,
        fast_fetch: Callable[[], bool] | None = None,
        fast_fetch_max_wait_ms: int = NUDGE_FETCH_MAX_WAIT_MS,
    ) -> None:
        self.name = name
        self.bootstrap = bootstrap
        self.handlers = dict(handlers)  # topic -> what to do with each of its records
        self.topics = tuple(self.handlers)
        initialise_consumer_series(SERVICE, self.topics, dead_letters=False)
        self.lookback_seconds = dict(lookback_seconds or {})  # topics that start at now - lookback
        self.caught_up = asyncio.Event()  # everything present at start-up has been handled
        self.probe_seconds = probe_seconds
        self.pace = FetchPace(fetch_max_wait_ms)
        self.fast_fetch = fast_fetch
        self.fast_fetch_max_wait_ms = fast_fetch_max_wait_ms
        self._positions: dict[TopicPartition, int] = {}
        self._last: dict[TopicPartition, tuple[int, int, bytes | None]] = {}  # (offset, timestamp, key)
        self._probing: set[TopicPartition] = set()
        self._consumer: AIOKafkaConsumer | None = None

    def position(self, topic: str, partition: int) -> int | None:
        """The next offset this tail will handle on a partition (None before it was positioned)."""
        return self._positions.get(TopicPartition(topic, partition))

    async def run(self) -> None:
        backoff = Backoff(first=0.5, cap=10.0)
        while True:
            consumer = await start_with_retry(self._new_consumer, f"gateway {self.name} tail")
            self._consumer = consumer
            try:
                partitions = await self._assign(consumer)
                targets = await self._position(consumer, partitions)
                backoff.reset()
                await self._consume(consumer, targets)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("%s tail restarting after error: %s", self.name, exc)
                await backoff.wait()
            finally:
                self._consumer = None
                with contextlib.suppress(Exception):
                    await consumer.stop()

    def refresh_fetch_wait(self) -> None:
        """Apply ``fast_fetch()`` now rather than when the current wait ends (a socket just connected)."""
        if self._consumer is not None:
            self._fetch_wait(self._consumer)

    def _new_consumer(self) -> AIOKafkaConsumer:
        return AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            client_id=f"gateway-{self.name}",
            max_poll_records=500,
            fetch_max_wait_ms=self.pace.wait_ms(),
            consumer_timeout_ms=FETCHER_SAFETY_WAKE_MS,
        )

    async def _assign(self, consumer: AIOKafkaConsumer) -> list[TopicPartition]:
        backoff = Backoff(first=1.0, cap=5.0)
        while True:
            await consumer.topics()  # refreshes cluster metadata for every topic
            partitions: list[TopicPartition] = []
            missing = []
            for topic in self.topics:
                ids = consumer.partitions_for_topic(topic)
                if not ids:
                    missing.append(topic)
                    continue
                partitions.extend(TopicPartition(topic, p) for p in sorted(ids))
            if not missing:
                consumer.assign(partitions)
                return partitions
            log.warning("%s tail waiting for topics %s", self.name, missing)
            await backoff.wait()

    async def _position(
        self, consumer: AIOKafkaConsumer, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """Seek every partition; return the end offsets that mark "caught up with start-up"."""
        ends: dict[TopicPartition, int] = await consumer.end_offsets(partitions)
        starts: dict[TopicPartition, int] = {tp: self._positions[tp] for tp in partitions if tp in self._positions}
        fresh = [tp for tp in partitions if tp not in self._positions]
        # Explicit end offsets rather than seek_to_end(), which resolves lazily on the first fetch and
        # could skip an event published in between.
        starts.update({tp: ends[tp] for tp in fresh if tp.topic not in self.lookback_seconds})
        since_ms = {
            tp: int((time.time() - self.lookback_seconds[tp.topic]) * 1000)
            for tp in fresh
            if tp.topic in self.lookback_seconds
        }
        if since_ms:
            try:
                found = await consumer.offsets_for_times(since_ms)
                starts.update({tp: (ends[tp] if hit is None else hit.offset) for tp, hit in found.items()})
            except Exception as exc:  # a broker without timestamp lookups: replay from the start
                log.warning("%s tail cannot look up offsets by time (%s); replaying", self.name, exc)
                starts.update((await consumer.beginning_offsets(list(since_ms))).items())
        for tp, offset in starts.items():
            consumer.seek(tp, offset)
            self._positions[tp] = offset
        return ends

    async def _consume(self, consumer: AIOKafkaConsumer, targets: dict[TopicPartition, int]) -> None:
        loop = asyncio.get_running_loop()
        next_probe = loop.time() + self.probe_seconds
        while True:
            # A socket that connects meanwhile shortens the wait through refresh_fetch_wait, so this loop
            # only wakes for records or once per wait, never to look for sockets.
            wait_ms = self._fetch_wait(consumer)
            batches = await consumer.getmany(timeout_ms=wait_ms + 1000, max_records=500)
            for tp, records in batches.items():
                if await self._apply(consumer, tp, records):
                    self.pace.saw_records()
            if not self.caught_up.is_set():
                positions = {tp: await consumer.position(tp) for tp in targets}
                if all(positions[tp] >= end for tp, end in targets.items()):
                    self.caught_up.set()
            for tp in consumer.assignment():
                highwater = consumer.highwater(tp)
                position = self._positions.get(tp)
                if highwater is None or position is None:
                    continue
                if highwater < position:
                    await self._rewind(consumer, tp, f"it ends at {highwater}, before our position {position}")
                    continue
                CONSUMER_LAG.labels(SERVICE, tp.topic, str(tp.partition)).set(highwater - position)
            if loop.time() >= next_probe:
                self._probe(consumer)
                next_probe = loop.time() + self.probe_seconds

    def _fetch_wait(self, consumer: AIOKafkaConsumer) -> int:
        """The fetch wait for now, given to the consumer: short while ``fast_fetch()`` says someone
        could be nudged, else the tail's pace."""
        wanted = self.pace.wait_ms()
        if self.fast_fetch is not None and self.fast_fetch():
            wanted = self.fast_fetch_max_wait_ms
        set_fetch_wait(consumer, wanted)
        return wanted

    async def _apply(self, consumer: AIOKafkaConsumer, tp: TopicPartition, records: list[Record]) -> bool:
        """Handle the new records of a fetched batch; True when there were any (a probe's re-read is not)."""
        if tp in self._probing:
            self._probing.discard(tp)
            first = records[0]
            if (first.offset, first.timestamp, first.key) != self._last.get(tp):
                await self._rewind(consumer, tp, f"offset {first.offset} now holds another record")
                return False
            records = records[1:]  # the probe re-read the last record handled: not again
        for record in records:
            self._handle(record)
            self._positions[tp] = record.offset + 1
            self._last[tp] = (record.offset, record.timestamp, record.key)
        return bool(records)

    def _probe(self, consumer: AIOKafkaConsumer) -> None:
        """Re-read the last record handled on each partition to check the log is still the one we read.

        A broker that lost its log (the embedded in-memory broker restarted, a topic was re-created)
        and has since received as many records as we had read looks like a quiet partition: only the
        record at our last offset tells the difference. Kafka keeps its log across restarts, so there a
        probe costs one record per partition and finds nothing.
        """
        for tp, (offset, _, _) in self._last.items():
            if tp not in self._probing and self._positions.get(tp) == offset + 1:
                self._probing.add(tp)
                consumer.seek(tp, offset)

    async def _rewind(self, consumer: AIOKafkaConsumer, tp: TopicPartition, why: str) -> None:
        """Reread ``tp`` from its start: its log is not the one we were reading.

        Kafka answers a fetch past the end with OffsetOutOfRange (reset to earliest by the consumer);
        some brokers just return nothing, which would stall this tail. Replaying is harmless.
        """
        start: int = (await consumer.beginning_offsets([tp]))[tp]
        log.warning("%s tail rereads %s[%d] from %d: %s", self.name, tp.topic, tp.partition, start, why)
        consumer.seek(tp, start)
        self._positions[tp] = start
        self._last.pop(tp, None)
        self._probing.discard(tp)

    def _handle(self, record: Record) -> None:
        try:
            outcome = self.handlers[record.topic](record)
        except Exception:  # one bad event must not stop nudges or deny-list updates for everyone else
            log.exception("gateway %s tail failed to handle an event", self.name, extra={"topic": record.topic})
            outcome = "failed"
        EVENTS_PROCESSED.labels(SERVICE, record.topic, outcome).inc()


def _event(record: Record) -> object | None:
    try:
        return parse_event(record.value or b"")
    except ValidationError:
        log.warning("unparseable event skipped", extra={"topic": record.topic, "offset": record.offset})
        return None


def nudge_handler(
    notify: Callable[[uuid.UUID, float], None], *, listening: Callable[[uuid.UUID], bool] = lambda _: True
) -> RecordHandler:
    """``bookmark.*`` / ``collection.changed`` / ``highlight.changed`` → ``notify(user_id, occurred_at_epoch)``.

    A record whose user holds no socket here (``listening`` says no) is skipped by its key, unparsed:
    the outbox keys every event by its user (``common.events.Event.key``). The tail reads every write
    of every user, and a replica holds sockets of few of them; parsing each event would make a burst of
    the gateway's event loop once per fetch (with no socket, 2 s of writes at once), and every request in
    flight would wait for it. A key that is not a user id is parsed.
    """

    def handle(record: Record) -> str:
        user = _user_of(record)
        if user is not None and not listening(user):
            return SKIPPED
        event = _event(record)
        if not isinstance(event, BookmarkSaved | BookmarkDeleted | CollectionChanged | HighlightChanged):
            return SKIPPED
        notify(event.userId, event.occurredAt.timestamp())
        return APPLIED

    return handle


def _user_of(record: Record) -> uuid.UUID | None:
    try:
        return uuid.UUID(record.key.decode("ascii")) if record.key is not None else None
    except (UnicodeDecodeError, ValueError):
        return None


def deny_handler(deny: Callable[[uuid.UUID, float, str], None]) -> RecordHandler:
    """``user.deleted`` → deny ``userId``; ``user.merged`` → deny ``sourceUserId`` (merged away).

    ``deny(user_id, occurred_at_epoch, reason)``; the reason becomes the close reason of their sockets.
    """

    def handle(record: Record) -> str:
        event = _event(record)
        if isinstance(event, UserDeleted):
            deny(event.userId, event.occurredAt.timestamp(), "account deleted")
        elif isinstance(event, UserMerged):
            deny(event.sourceUserId, event.occurredAt.timestamp(), "account merged")
        else:
            return SKIPPED
        return APPLIED

    return handle
