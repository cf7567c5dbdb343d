"""The database readiness check's grace: failing checks keep the process ready until they have failed for
the grace period (from the start of the first failing one), and the first passing check ends it. A fake
check and a fake clock: nothing connects, nothing sleeps."""

from __future__ import annotations

from typing import Any

import pytest

from common.db import DatabaseReadiness


class Scripted:
    """A check that fails while ``down`` and moves the fake clock by ``takes`` seconds per call."""

    def __init__(self) -> None:
        self.now = 100.0
        self.down = False
        self.takes = 1.5

    def clock(self) -> float:
        return self.now

    async def check(self, _engine: Any) -> None:
        self.now += self.takes
        if self.down:
            raise ConnectionError("no answer")


def _readiness(script: Scripted, grace: float) -> DatabaseReadiness:
    return DatabaseReadiness(None, grace_seconds=grace, check=script.check, clock=script.clock)  # type: ignore[arg-type]


async def test_failures_within_the_grace_keep_the_process_ready_and_then_it_is_not() -> None:
    script = Scripted()
    ready = _readiness(script, grace=3.0)
    await ready()
    script.down = True
    await ready()  # 1.5 s into the failures
    assert ready.failing_since == 101.5
    script.now += 0.2
    with pytest.raises(ConnectionError):
        await ready()  # 3.2 s since the first failing check began


async def test_the_first_passing_check_makes_the_process_ready_again() -> None:
    script = Scripted()
    ready = _readiness(script, grace=1.0)
    script.down = True
    with pytest.raises(ConnectionError):
        await ready()
    script.down = False
    await ready()
    assert ready.failing_since is None
    script.down, script.takes = True, 0.5
    await ready()  # a new failure starts a new grace


async def test_no_grace_fails_at_the_first_failing_check() -> None:
    script = Scripted()
    script.down = True
    with pytest.raises(ConnectionError):
        await _readiness(script, grace=0.0)()
