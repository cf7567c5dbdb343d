"""The outbox relay's pending gauges, read from the batch it just fetched when that batch held every
pending row, and its linger after a wake-up under load."""

from __future__ import annotations

from common.outbox import BUSY_WITHIN, LINGER, gauges_of_batch, linger_after_wake


def test_a_short_batch_is_everything_pending_and_its_oldest_row_gives_the_age() -> None:
    assert gauges_of_batch([0.5, 2.25, 1.0], batch_size=500) == (3, 2.25)


def test_an_empty_batch_means_nothing_is_pending() -> None:
    assert gauges_of_batch([], batch_size=500) == (0, 0.0)


def test_a_full_batch_may_not_be_everything_so_the_database_is_asked() -> None:
    assert gauges_of_batch([0.1, 0.2], batch_size=2) is None
    assert gauges_of_batch([0.1, 0.2, 0.3], batch_size=2) is None


def test_a_wake_up_soon_after_a_drain_lingers_to_gather_a_batch() -> None:
    assert linger_after_wake(0.001) == LINGER
    assert linger_after_wake(BUSY_WITHIN / 2) == LINGER


def test_a_wake_up_on_a_quiet_stack_publishes_at_once() -> None:
    assert linger_after_wake(BUSY_WITHIN) == 0.0
    assert linger_after_wake(4.0) == 0.0
