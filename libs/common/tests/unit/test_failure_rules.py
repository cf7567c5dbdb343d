"""Pure rules of failure handling: restart delays, outage backoff, noticing a lost broker log."""

from __future__ import annotations

import random

from aiokafka import TopicPartition
from aiokafka.structs import RecordMetadata

from common.broker_log import AckedLog
from common.consumer import (
    HEALTHY_RUN_SECONDS,
    OUTAGE_RETRY_CAP_SECONDS,
    RESTART_DELAY_CAP,
    RESTART_DELAY_FIRST,
    next_restart_delay,
    outage_backoff,
    restart_backoff,
)


def ack(topic: str, partition: int, offset: int) -> RecordMetadata:
    tp = TopicPartition(topic, partition)
    return RecordMetadata(topic, partition, tp, offset, -1, -1, -1)


def test_restart_delay_grows_while_failing_and_resets_after_a_healthy_run() -> None:
    backoff = restart_backoff()
    backoff.rng = random.Random(1)
    seen = [next_restart_delay(backoff, healthy_for=0.1) for _ in range(8)]
    assert RESTART_DELAY_FIRST / 2 <= seen[0] <= RESTART_DELAY_FIRST
    assert RESTART_DELAY_CAP / 2 <= seen[-1] <= RESTART_DELAY_CAP
    assert seen[3] > seen[0]
    assert next_restart_delay(backoff, healthy_for=HEALTHY_RUN_SECONDS) <= RESTART_DELAY_FIRST


def test_outage_backoff_is_capped_and_never_overflows() -> None:
    backoff = outage_backoff(0.2)
    backoff.rng = random.Random(2)
    first, second = backoff.next_delay(), backoff.next_delay()
    assert 0.1 <= first <= 0.2 and 0.2 <= second <= 0.4
    for _ in range(10_000):
        last = backoff.next_delay()
    assert OUTAGE_RETRY_CAP_SECONDS / 2 <= last <= OUTAGE_RETRY_CAP_SECONDS


def test_acked_log_notices_an_acknowledgement_that_goes_backwards() -> None:
    log = AckedLog()
    assert log.record([ack("t", 0, 0), ack("t", 0, 1), ack("t", 1, 0)])
    assert log.record([ack("t", 0, 2)])
    assert not log.record([ack("t", 0, 0)])  # a fresh log hands out offset 0 again


def test_acked_log_notices_an_end_offset_before_one_seen_earlier() -> None:
    log = AckedLog()
    log.record([ack("t", 0, 4), ack("t", 1, 9)])
    assert log.lost({TopicPartition("t", 0): 5, TopicPartition("t", 1): 10}) == []
    assert log.lost({TopicPartition("t", 0): 6, TopicPartition("t", 1): 3}) == [TopicPartition("t", 1)]
    log.forget()
    assert log.lost({TopicPartition("t", 1): 0}) == []


def test_acks_running_ahead_of_the_reported_end_are_not_a_loss() -> None:
    # The embedded broker acknowledges batched records with offsets beyond the end offsets it reports
    # (measured: acks up to 434 while the end offset said 349); that is not a lost log.
    log = AckedLog()
    assert log.record([ack("t", 2, n) for n in range(300, 435)])
    assert log.lost({TopicPartition("t", 2): 349}) == []
    assert log.lost({TopicPartition("t", 2): 435}) == []


def test_an_empty_partition_that_had_acknowledged_records_is_a_loss() -> None:
    # A topic deleted and re-created after the relay's last look (no end offset seen yet) still counts.
    log = AckedLog()
    assert log.record([ack("t", 0, 3)])
    assert log.lost({TopicPartition("t", 0): 0, TopicPartition("t", 1): 0}) == [TopicPartition("t", 0)]


def test_a_partition_the_broker_no_longer_has_is_a_loss() -> None:
    # The relay wrote to partition 3 of a topic a client auto-created with 4 partitions; the stack then
    # re-created it with 3. A whole topic missing counts the same; other topics are not affected.
    log = AckedLog()
    assert log.record([ack("t", 3, 0), ack("t", 1, 5), ack("u", 0, 2)])
    ends = {TopicPartition("t", 1): 6, TopicPartition("u", 0): 3}
    assert log.lost(ends, {"t": {0, 1, 2}, "u": {0, 1, 2}}) == [TopicPartition("t", 3)]
    assert log.lost({TopicPartition("t", 1): 6}, {"t": {0, 1, 2}}) == [TopicPartition("t", 3), TopicPartition("u", 0)]
    assert log.lost(ends) == []  # partitions unknown: only end offsets count
