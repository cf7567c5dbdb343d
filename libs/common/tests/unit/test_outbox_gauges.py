"""The outbox relay's pending gauges, read from the batch it just fetched when that batch held every
pending row (issue 15: one query less per drain)."""

from __future__ import annotations

from common.outbox import gauges_of_batch


def test_a_short_batch_is_everything_pending_and_its_oldest_row_gives_the_age() -> None:
    assert gauges_of_batch([0.5, 2.25, 1.0], batch_size=500) == (3, 2.25)


def test_an_empty_batch_means_nothing_is_pending() -> None:
    assert gauges_of_batch([], batch_size=500) == (0, 0.0)


def test_a_full_batch_may_not_be_everything_so_the_database_is_asked() -> None:
    assert gauges_of_batch([0.1, 0.2], batch_size=2) is None
    assert gauges_of_batch([0.1, 0.2, 0.3], batch_size=2) is None
