"""The anonymous sign-up limiter, driven by a fake clock."""

from __future__ import annotations

import pytest

from auth.domain.ratelimit import SlidingWindowLimiter, client_key
from devstack.testing import ManualClock


def test_allows_the_limit_then_refuses_with_the_wait() -> None:
    clock = ManualClock()
    limiter = SlidingWindowLimiter(limit=3, window_seconds=60, clock=clock)

    assert [limiter.hit("a") for _ in range(3)] == [None, None, None]
    clock.now += 10
    assert limiter.hit("a") == 50
    assert limiter.hit("b") is None


def test_the_window_slides_hit_by_hit() -> None:
    clock = ManualClock()
    limiter = SlidingWindowLimiter(limit=2, window_seconds=60, clock=clock)
    limiter.hit("a")
    clock.now += 30
    limiter.hit("a")

    clock.now += 30  # the first hit leaves the window, the second is still in it
    assert limiter.hit("a") is None
    assert limiter.hit("a") == 30


def test_refused_hits_do_not_extend_the_wait() -> None:
    clock = ManualClock()
    limiter = SlidingWindowLimiter(limit=1, window_seconds=60, clock=clock)
    limiter.hit("a")
    for _ in range(100):
        limiter.hit("a")

    clock.now += 60
    assert limiter.hit("a") is None


def test_retry_after_is_at_least_one_second() -> None:
    clock = ManualClock()
    limiter = SlidingWindowLimiter(limit=1, window_seconds=60, clock=clock)
    limiter.hit("a")
    clock.now += 59.9

    assert limiter.hit("a") == 1


def test_quiet_keys_are_forgotten() -> None:
    clock = ManualClock()
    limiter = SlidingWindowLimiter(limit=5, window_seconds=60, clock=clock)
    for i in range(100):
        limiter.hit(f"k{i}")

    clock.now += 61
    limiter.hit("fresh")

    assert set(limiter._hits) == {"fresh"}


def test_zero_means_unlimited() -> None:
    limiter = SlidingWindowLimiter(limit=0)

    assert all(limiter.hit("a") is None for _ in range(1000))


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("203.0.113.7", "203.0.113.7"),
        (" 203.0.113.7 ", "203.0.113.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"),
        ("::ffff:203.0.113.7", "203.0.113.7"),
        ("not-an-ip", "not-an-ip"),
    ],
)
def test_client_keys(address: str, key: str) -> None:
    assert client_key(address) == key
