"""Exponential backoff with jitter, shared by the offline queue and the WebSocket reconnect loop.

Jitter matters more than the curve: after an outage every device of every user retries, and without
it they would all come back in the same instant.
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass

__all__ = ["Backoff", "default_rng"]

# Beyond this the ceiling is pinned at ``maximum`` anyway; capping the exponent keeps float math finite.
_MAX_EXPONENT = 62


def default_rng() -> random.Random:
    return secrets.SystemRandom()


@dataclass(frozen=True)
class Backoff:
    """Delay before retry number ``attempt`` (1-based): a random value in ``[ceiling*(1-jitter), ceiling]``.

    ``ceiling = min(maximum, base * factor**(attempt-1))``. ``jitter=1`` is "full jitter" (uniform in
    ``[0, ceiling]``); ``jitter=0`` is plain exponential backoff.
    """

    base: float = 0.5
    factor: float = 2.0
    maximum: float = 30.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if self.base < 0 or self.maximum < 0:
            raise ValueError("base and maximum must be >= 0")
        if self.factor < 1:
            raise ValueError("factor must be >= 1")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter must be within [0, 1]")

    def ceiling(self, attempt: int) -> float:
        if attempt < 1:
            raise ValueError("attempt is 1-based")
        exponent = min(attempt - 1, _MAX_EXPONENT)
        return float(min(self.maximum, self.base * self.factor**exponent))

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        ceiling = self.ceiling(attempt)
        spread = ceiling * self.jitter
        return ceiling - spread + (rng or default_rng()).random() * spread
