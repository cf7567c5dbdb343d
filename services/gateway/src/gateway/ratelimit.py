"""In-process token buckets (per replica: N replicas admit up to N times the configured rate).

A bucket holds up to one minute's allowance and refills continuously, so a client may burst its whole
minute and is then held to the steady rate. Idle buckets that have refilled completely are equivalent
to no bucket and are dropped, which keeps memory proportional to recently active keys.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset_seconds: int  # until the bucket is full again
    retry_after_seconds: int  # until the next request would be admitted (0 when allowed)

    def headers(self) -> dict[str, str]:
        return {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset_seconds),
        }


class TokenBucketLimiter:
    def __init__(self, per_minute: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if per_minute <= 0:
            raise ValueError("per_minute must be positive")
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, updated_at)
        self._next_prune = 0.0

    def take(self, key: str) -> Decision:
        now = self._clock()
        self._prune(now)
        tokens, updated = self._buckets.get(key, (self.capacity, now))
        tokens = min(self.capacity, tokens + (now - updated) * self.rate)
        allowed = tokens >= 1.0
        if allowed:
            tokens -= 1.0
        self._buckets[key] = (tokens, now)
        retry_after = 0 if allowed else max(1, math.ceil((1.0 - tokens) / self.rate))
        return Decision(
            allowed=allowed,
            limit=int(self.capacity),
            remaining=int(tokens),
            reset_seconds=math.ceil((self.capacity - tokens) / self.rate),
            retry_after_seconds=retry_after,
        )

    def __len__(self) -> int:
        return len(self._buckets)

    def _prune(self, now: float) -> None:
        if now < self._next_prune:
            return
        self._next_prune = now + 60.0
        full = [
            key
            for key, (tokens, updated) in self._buckets.items()
            if tokens + (now - updated) * self.rate >= self.capacity
        ]
        for key in full:
            del self._buckets[key]
