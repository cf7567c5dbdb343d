"""The shared backoff: jittered delays within their exponential step, capped, reset after a success, and
the retry of one call bounded by what may be retried and by a deadline. A seeded random source and a fake
clock: nothing sleeps."""

from __future__ import annotations

import random

import pytest

from common.retry import Backoff, retry


class FakeClock:
    """A clock that moves only when something sleeps on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _backoff(clock: FakeClock, seed: int = 7, **kwargs: float) -> Backoff:
    return Backoff(**{"first": 0.5, "cap": 10.0, **kwargs}, rng=random.Random(seed), sleep=clock.sleep)


def test_each_delay_lies_in_the_upper_half_of_its_capped_exponential_step() -> None:
    backoff = _backoff(FakeClock())
    steps = [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0]
    for step in steps:
        delay = backoff.next_delay()
        assert step / 2 <= delay <= step


def test_delays_are_jittered_so_replicas_do_not_retry_in_lockstep() -> None:
    replicas = [_backoff(FakeClock(), seed=seed) for seed in range(20)]
    third = [(b.next_delay(), b.next_delay(), b.next_delay())[2] for b in replicas]
    assert len({round(d, 6) for d in third}) == len(third)
    assert all(1.0 <= d <= 2.0 for d in third)


def test_a_seeded_source_gives_the_same_delays() -> None:
    first, second = _backoff(FakeClock(), seed=3), _backoff(FakeClock(), seed=3)
    assert [first.next_delay() for _ in range(6)] == [second.next_delay() for _ in range(6)]


async def test_wait_sleeps_the_delay_and_reset_starts_over() -> None:
    clock = FakeClock()
    backoff = _backoff(clock)
    for _ in range(5):
        await backoff.wait()
    assert clock.slept[-1] >= 4.0
    backoff.reset()
    await backoff.wait()
    assert 0.25 <= clock.slept[-1] <= 0.5


@pytest.mark.parametrize("first,cap,factor", [(0.0, 1.0, 2.0), (2.0, 1.0, 2.0), (0.5, 1.0, 0.5)])
def test_a_backoff_that_would_spin_or_shrink_is_refused(first: float, cap: float, factor: float) -> None:
    with pytest.raises(ValueError):
        Backoff(first=first, cap=cap, factor=factor)


async def test_retry_tries_again_after_retryable_failures_until_it_succeeds() -> None:
    clock = FakeClock()
    outcomes: list[Exception | str] = [ConnectionError("down"), TimeoutError(), "ok"]
    seen: list[tuple[str, float]] = []

    async def call() -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    result = await retry(
        call,
        retryable=lambda exc: isinstance(exc, OSError),
        backoff=_backoff(clock),
        on_retry=lambda exc, delay: seen.append((type(exc).__name__, delay)),
        clock=clock,
    )
    assert result == "ok"
    assert [name for name, _ in seen] == ["ConnectionError", "TimeoutError"]
    assert clock.slept == [delay for _, delay in seen]


async def test_retry_raises_a_failure_that_is_not_retryable_at_once() -> None:
    clock = FakeClock()

    async def call() -> None:
        raise ValueError("a bug")

    with pytest.raises(ValueError):
        await retry(call, retryable=lambda exc: isinstance(exc, OSError), backoff=_backoff(clock), clock=clock)
    assert clock.slept == []


async def test_retry_gives_up_when_the_next_attempt_would_start_after_the_deadline() -> None:
    clock = FakeClock()
    attempts = 0

    async def call() -> None:
        nonlocal attempts
        attempts += 1
        raise ConnectionError("still down")

    with pytest.raises(ConnectionError):
        await retry(call, retryable=lambda _: True, backoff=_backoff(clock), deadline_seconds=5.0, clock=clock)
    assert clock.now <= 5.0
    assert attempts == len(clock.slept) + 1
    assert attempts >= 3
