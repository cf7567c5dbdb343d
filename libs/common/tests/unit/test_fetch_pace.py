"""FetchPace: a consumer polls at its active wait while events flow and at the idle wait once quiet."""

from __future__ import annotations

from common.consumer import IDLE_AFTER_SECONDS, IDLE_FETCH_MAX_WAIT_MS, FetchPace
from devstack.testing import ManualClock


def test_a_consumer_starts_at_its_active_wait_and_slows_down_after_a_quiet_spell() -> None:
    clock = ManualClock()
    pace = FetchPace(2_000, idle_ms=8_000, idle_after=60.0, clock=clock)
    assert pace.wait_ms() == 2_000
    clock.now += 59.9
    assert pace.wait_ms() == 2_000
    clock.now += 0.1
    assert pace.wait_ms() == 8_000


def test_records_bring_the_active_wait_back_and_restart_the_quiet_spell() -> None:
    clock = ManualClock()
    pace = FetchPace(2_000, idle_ms=8_000, idle_after=60.0, clock=clock)
    clock.now += 120
    assert pace.wait_ms() == 8_000
    pace.saw_records()
    assert pace.wait_ms() == 2_000
    clock.now += 59
    assert pace.wait_ms() == 2_000
    clock.now += 1
    assert pace.wait_ms() == 8_000


def test_an_active_wait_longer_than_the_idle_one_is_kept() -> None:
    clock = ManualClock()
    pace = FetchPace(10_000, idle_ms=8_000, idle_after=60.0, clock=clock)
    clock.now += 600
    assert pace.wait_ms() == 10_000


def test_the_defaults_slow_a_background_consumer_down_after_a_quiet_minute() -> None:
    clock = ManualClock()
    pace = FetchPace(2_000, clock=clock)
    clock.now += IDLE_AFTER_SECONDS
    assert pace.wait_ms() == IDLE_FETCH_MAX_WAIT_MS > 2_000
