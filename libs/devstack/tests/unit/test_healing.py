"""The healer's rule: restart a dead component with growing backoff, reset after a healthy run."""

from __future__ import annotations

from devstack.healing import FIRST_DELAY, HEALTHY_SECONDS, MAX_DELAY, Component, Healer, next_restart_delay
from devstack.testing import ManualClock


def test_restart_delay_doubles_up_to_the_cap_and_resets_after_a_healthy_run() -> None:
    delays = [0.0]
    for _ in range(10):
        delays.append(next_restart_delay(delays[-1], healthy_for=1.0))
    assert delays[1] == FIRST_DELAY and delays[2] == 2 * FIRST_DELAY and delays[-1] == MAX_DELAY
    assert next_restart_delay(MAX_DELAY, healthy_for=HEALTHY_SECONDS) == FIRST_DELAY


def test_healer_waits_the_delay_then_restarts_and_retries_a_failed_restart() -> None:
    clock = ManualClock(0.0)
    alive = {"db": True}
    attempts: list[float] = []

    def restart() -> None:
        attempts.append(clock.now)
        if len(attempts) == 1:
            raise OSError("port still busy")
        alive["db"] = True

    healer = Healer([Component("db", lambda: alive["db"], restart)], clock=clock)
    assert healer.check() == []
    clock.now = 100.0
    alive["db"] = False
    assert healer.check() == []  # died just now: wait FIRST_DELAY
    clock.now += FIRST_DELAY
    assert healer.check() == []  # restart attempted, failed
    assert attempts == [100.0 + FIRST_DELAY]
    clock.now += FIRST_DELAY
    assert healer.check() == []  # still dead: now waits twice as long
    clock.now += 2 * FIRST_DELAY
    assert healer.check() == ["db"]
    assert alive["db"] and healer.restarts("db") == 2
