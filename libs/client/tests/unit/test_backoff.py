"""Backoff schedule and Retry-After parsing."""

from __future__ import annotations

import random

import pytest

from bookmark_client.backoff import Backoff
from bookmark_client.errors import parse_retry_after


class FixedRandom(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


def test_ceiling_doubles_then_caps() -> None:
    policy = Backoff(base=0.5, factor=2, maximum=30)
    assert [policy.ceiling(n) for n in range(1, 9)] == [0.5, 1, 2, 4, 8, 16, 30, 30]
    assert policy.ceiling(10_000) == 30  # no float overflow on a long outage


def test_delay_is_jittered_within_bounds() -> None:
    policy = Backoff(base=1, factor=2, maximum=60, jitter=0.5)
    assert policy.delay(3, FixedRandom(0.0)) == 2.0  # ceiling 4, lower bound 4 * (1 - 0.5)
    assert policy.delay(3, FixedRandom(1.0)) == 4.0
    rng = random.Random(1)
    delays = [policy.delay(3, rng) for _ in range(200)]
    assert all(2.0 <= d <= 4.0 for d in delays)
    assert len(set(delays)) > 1  # actually spread out


def test_full_and_no_jitter() -> None:
    assert Backoff(base=1, jitter=1).delay(1, FixedRandom(0.0)) == 0.0
    assert Backoff(base=1, jitter=0).delay(4, FixedRandom(0.3)) == 8.0


@pytest.mark.parametrize("kwargs", [{"jitter": 1.5}, {"factor": 0.5}, {"base": -1}])
def test_invalid_policy(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Backoff(**kwargs)


def test_attempts_are_one_based() -> None:
    with pytest.raises(ValueError):
        Backoff().delay(0)


def test_retry_after_forms() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 0 ") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    # HTTP-date, relative to a fixed "now" (2015-10-21T07:28:00Z).
    now = 1445412480.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now=now) == 30.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now=now) == 0.0
