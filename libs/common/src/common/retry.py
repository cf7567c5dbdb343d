"""One backoff for every retry loop of the server code: capped exponential delays with jitter.

After an outage every replica's loops fail at the same moment; with plain doubling delays they would all
retry in lockstep and hit the recovering dependency together, again and again. Each delay here is drawn
uniformly from the upper half of its exponential step ("equal jitter"): never less than half the step,
so a loop never spins, and never more than the step, so the cap still bounds how late a recovery is
noticed.

:class:`Backoff` is the state of one loop (``await backoff.wait()`` after a failure, ``reset()`` after a
success); :func:`retry` runs one call again while its failure is retryable, up to an optional deadline.
Both take their random source and their sleep (and :func:`retry` its clock) as arguments, so tests run
them with a seeded ``random.Random`` and a fake clock, without sleeping.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

__all__ = ["Backoff", "retry"]

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]

# One generator for the process, seeded from the OS: replicas draw different delays.
_RANDOM = random.Random()  # noqa: S311 - jitter, not cryptography


@dataclass
class Backoff:
    """Delays ``first``, ``first*factor``, ... capped at ``cap``, each drawn from [step/2, step]."""

    first: float
    cap: float
    factor: float = 2.0
    rng: random.Random = field(default=_RANDOM, repr=False)
    sleep: Sleep = field(default=asyncio.sleep, repr=False)
    failures: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.first <= self.cap or self.factor < 1:
            raise ValueError("a backoff needs 0 < first <= cap and factor >= 1")

    def step(self) -> float:
        """The upper bound of the next delay (before jitter)."""
        return min(self.cap, self.first * self.factor ** min(self.failures, 64))

    def next_delay(self) -> float:
        """Count a failure and return the delay to wait before the next attempt."""
        step = self.step()
        self.failures += 1
        return step / 2 + self.rng.uniform(0, step / 2)

    async def wait(self) -> float:
        """Count a failure and sleep its delay; returns the delay slept."""
        delay = self.next_delay()
        await self.sleep(delay)
        return delay

    def reset(self) -> None:
        """A success: the next failure waits about ``first`` again."""
        self.failures = 0


async def retry(
    call: Callable[[], Awaitable[T]],
    *,
    retryable: Callable[[Exception], bool],
    backoff: Backoff,
    deadline_seconds: float | None = None,
    on_retry: Callable[[Exception, float], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """``await call()`` until it succeeds; a retryable failure waits ``backoff`` and tries again.

    A failure that is not retryable, or one that comes when the next attempt could not start before
    ``deadline_seconds`` (from the first attempt) have passed, is raised. ``on_retry`` sees each
    retried failure and the delay before the next attempt (for a log line or a metric).
    """
    started = clock()
    while True:
        try:
            return await call()
        except Exception as exc:
            if not retryable(exc):
                raise
            delay = backoff.next_delay()
            if deadline_seconds is not None and clock() + delay - started > deadline_seconds:
                raise
            if on_retry is not None:
                on_retry(exc, delay)
            await backoff.sleep(delay)
