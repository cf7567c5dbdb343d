"""A record re-published by an anti-entropy pass is not asked for again until its event had time to arrive."""

from __future__ import annotations

import uuid

from enrichment.anti_entropy import InFlight


def test_a_republished_record_is_left_out_until_the_settle_time_passed() -> None:
    now = [100.0]
    memory = InFlight(settle_seconds=30, clock=lambda: now[0])
    user, other = uuid.uuid4(), uuid.uuid4()
    memory.mark(user, ["a", "b"])

    assert memory.leave_out(user, ["a", "b", "c"]) == ["c"]
    assert memory.leave_out(other, ["a"]) == ["a"]  # per user
    now[0] += 30
    assert memory.leave_out(user, ["a", "b", "c"]) == ["a", "b", "c"]
