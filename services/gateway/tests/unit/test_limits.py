"""Token buckets and the deny-list, on a fake clock."""

from __future__ import annotations

import uuid

from devstack.testing import ManualClock
from gateway.denylist import DenyList
from gateway.ratelimit import TokenBucketLimiter


def test_bucket_admits_a_minute_of_burst_then_the_steady_rate() -> None:
    clock = ManualClock()
    limiter = TokenBucketLimiter(60, clock=clock)
    decisions = [limiter.take("u") for _ in range(61)]
    assert all(d.allowed for d in decisions[:60])
    assert [d.remaining for d in decisions[:3]] == [59, 58, 57]
    refused = decisions[60]
    assert not refused.allowed
    assert refused.retry_after_seconds == 1
    assert refused.headers() == {"RateLimit-Limit": "60", "RateLimit-Remaining": "0", "RateLimit-Reset": "60"}
    clock.now += 1.0
    assert limiter.take("u").allowed
    assert limiter.take("other").allowed  # keys are independent


def test_idle_full_buckets_are_forgotten() -> None:
    clock = ManualClock()
    limiter = TokenBucketLimiter(60, clock=clock)
    for i in range(100):
        limiter.take(f"k{i}")
    assert len(limiter) == 100
    clock.now += 120
    limiter.take("fresh")
    assert len(limiter) == 1


def test_deny_list_keeps_users_for_the_token_lifetime() -> None:
    clock = ManualClock()
    denylist = DenyList(retention_seconds=960, clock=clock)
    user = uuid.uuid4()
    assert not denylist.is_denied(user)
    assert denylist.deny(user, since=clock.now - 10)
    assert denylist.is_denied(user)
    clock.now += 949
    assert denylist.is_denied(user)
    clock.now += 2
    assert not denylist.is_denied(user)


def test_deletions_older_than_any_token_are_ignored() -> None:
    clock = ManualClock()
    denylist = DenyList(retention_seconds=960, clock=clock)
    assert not denylist.deny(uuid.uuid4(), since=clock.now - 961)
    assert len(denylist) == 0
