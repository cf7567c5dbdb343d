"""Noticing that the broker lost records the outbox relay had delivered.

Kafka keeps its log across restarts; the embedded broker of ``make run`` (Tansu with memory storage)
does not, and a real cluster can lose an unreplicated partition. Either way the outbox rows were marked
published, so without a check nothing would ever send them again and every consumer's view would stay
short of the source for good.

The relay remembers the highest offset the broker acknowledged per partition, and the end offset it
last saw for each of them. The log of a partition only grows, so an acknowledgement at or below a
remembered offset, or an end offset below one seen before, means the broker's log is not the one we
wrote to. (End offsets are compared with earlier end offsets, not with acknowledged offsets: the
embedded broker acknowledges a batch with offsets that run ahead of the end offsets it reports, so that
comparison re-published the whole window under every burst of writes.) Either way the relay then
re-publishes its retained window (every outbox row still kept, ``OUTBOX_RETENTION``), in id order.
Consumers are idempotent (``processed_events``) and the projections keep the newest state by position,
so a re-sent event is harmless.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.structs import RecordMetadata

log = logging.getLogger("common.broker_log")


class AckedLog:
    """The highest acknowledged offset per partition, and the checks that the broker still has it."""

    def __init__(self) -> None:
        self._acked: dict[TopicPartition, int] = {}
        self._ends: dict[TopicPartition, int] = {}

    def record(self, acks: Iterable[RecordMetadata]) -> bool:
        """Remember acknowledgements; False when one lies at or below an offset acknowledged before."""
        intact = True
        for ack in acks:
            previous = self._acked.get(ack.topic_partition)
            if previous is not None and ack.offset <= previous:
                intact = False
            self._acked[ack.topic_partition] = ack.offset if previous is None else max(previous, ack.offset)
        return intact

    def forget(self) -> None:
        self._acked.clear()
        self._ends.clear()

    def lost(
        self, end_offsets: dict[TopicPartition, int], partitions: dict[str, set[int]] | None = None
    ) -> list[TopicPartition]:
        """The partitions whose log now ends before where it was seen to end, is empty although records
        were acknowledged on it, or no longer exists (``partitions``: the broker's current partitions per
        topic, when known). These are the marks of a topic deleted and re-created, with fewer partitions
        too (one auto-created by a client before the stack re-created it). Remembers the ends."""
        gone = [tp for tp in self._acked if partitions is not None and tp.partition not in partitions.get(tp.topic, ())]
        shrunk = [
            tp for tp, end in end_offsets.items() if end < self._ends.get(tp, 0) or (end == 0 and tp in self._acked)
        ]
        for tp, end in end_offsets.items():
            self._ends[tp] = max(end, self._ends.get(tp, 0))
        return sorted(set(gone + shrunk), key=lambda tp: (tp.topic, tp.partition))

    async def check(self, consumer: AIOKafkaConsumer) -> list[TopicPartition]:
        """Ask the broker which partitions exist and where those written to end; [] when it cannot say.

        Partitions are looked up first: asking for the end offset of a partition the broker no longer has
        fails the whole request, which would hide every loss for good."""
        if not self._acked:
            return []
        with contextlib.suppress(Exception):  # broker away: the next round tells
            await consumer.topics()  # refreshes the metadata of every topic (never auto-creates one)
            partitions = {
                topic: set(consumer.partitions_for_topic(topic) or ()) for topic in {tp.topic for tp in self._acked}
            }
            present = [tp for tp in self._acked if tp.partition in partitions[tp.topic]]
            ends: dict[TopicPartition, int] = await consumer.end_offsets(present) if present else {}
            return self.lost(ends, partitions)
        return []


Reference = tuple[int, bytes]  # an offset and the value of the record a consumer read there


class ReadLog:
    """Noticing that a partition's log was replaced under a running consumer, before it commits there.

    A broker that keeps its log in memory restarts empty, and a topic can be deleted and created again
    (the local stack re-creates one a client auto-created with the wrong partition count). Once the new
    log has grown past the consumer's position, nothing in a fetch says so: the records below that
    position would be skipped, and for good once the position is committed. So before committing a
    batch, the consumer asks the broker for the record it read last before that batch: another record
    there, or none, means a new log, which it reads again from the beginning instead (handlers are
    idempotent). A batch it cannot vouch for (the broker did not answer) is not committed either.
    """

    def __init__(self) -> None:
        self._last: dict[TopicPartition, Reference] = {}

    def read(self, tp: TopicPartition, offset: int, value: bytes) -> None:
        """The consumer read ``value`` at ``offset`` of ``tp`` and committed past it."""
        self._last[tp] = (offset, value)

    def forget(self, tp: TopicPartition) -> None:
        """The consumer reads ``tp`` again from its beginning: the reference no longer applies."""
        self._last.pop(tp, None)

    async def verify(self, checker: AIOKafkaConsumer, tps: Iterable[TopicPartition]) -> dict[TopicPartition, bool]:
        """For each partition of ``tps``: True when the broker still holds the last record read there (or
        nothing was read yet), False when it holds another one or none; left out when it did not answer."""
        references = {tp: self._last[tp] for tp in tps if tp in self._last}
        verdicts = {tp: True for tp in tps if tp not in references}
        if references:
            found = await records_at(checker, {tp: offset for tp, (offset, _) in references.items()})
            verdicts |= {tp: found[tp] == value for tp, (_, value) in references.items() if tp in found}
        return verdicts


# How long a consumer waits for the broker to say what records it holds before giving up on a batch's
# commit (the batch is read again later).
RECORD_CHECK_SECONDS = 2.0


async def records_at(
    checker: AIOKafkaConsumer, offsets: dict[TopicPartition, int]
) -> dict[TopicPartition, bytes | None]:
    """The value of the record at each offset, None where the log ends at or before it; partitions the
    broker did not answer for in ``RECORD_CHECK_SECONDS`` (away, or the offset already deleted by
    retention) are left out: unknown is not replaced."""
    found: dict[TopicPartition, bytes | None] = {}
    with contextlib.suppress(Exception):  # includes the deadline: what is found so far stands
        async with asyncio.timeout(RECORD_CHECK_SECONDS):
            checker.assign(list(offsets))
            ends = await checker.end_offsets(list(offsets))
            found = {tp: None for tp, offset in offsets.items() if ends.get(tp, 0) <= offset}
            for tp, offset in offsets.items():
                checker.seek(tp, offset)
            waiting = [tp for tp in offsets if tp not in found]
            while waiting:
                batches = await checker.getmany(*waiting, timeout_ms=int(RECORD_CHECK_SECONDS * 1000))
                for tp, records in batches.items():
                    if records and records[0].offset == offsets[tp]:
                        found[tp] = records[0].value or b""
                    waiting.remove(tp)
    with contextlib.suppress(Exception):  # an assigned partition would be fetched on and on in the background
        checker.unsubscribe()
    return found
