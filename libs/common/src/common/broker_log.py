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
