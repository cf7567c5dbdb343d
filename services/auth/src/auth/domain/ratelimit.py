"""In-process sliding-window rate limit per client address; no I/O."""

from __future__ import annotations

import ipaddress
import math
import time
from collections import deque
from collections.abc import Callable


def client_key(address: str) -> str:
    """The bucket of a client address: the IPv4 address, or the /64 of an IPv6 one.

    One IPv6 subscriber usually holds a whole /64, so limiting single v6 addresses would limit nothing.
    """
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return address.strip()
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class SlidingWindowLimiter:
    """At most ``limit`` hits per key in any trailing ``window_seconds``.

    Keeps the times of the last ``limit`` hits per key (bounded memory per key) and forgets keys that
    have been quiet for a whole window.
    """

    def __init__(
        self, *, limit: int, window_seconds: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.window = window_seconds
        self.clock = clock
        self._hits: dict[str, deque[float]] = {}
        self._last_sweep = clock()

    def hit(self, key: str) -> int | None:
        """Count a hit; None when allowed, else the whole seconds until the next hit would be."""
        if self.limit <= 0:
            return None
        now = self.clock()
        self._sweep(now)
        hits = self._hits.get(key)
        if hits is None:
            hits = self._hits[key] = deque(maxlen=self.limit)
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if len(hits) >= self.limit:
            return max(1, math.ceil(hits[0] + self.window - now))
        hits.append(now)
        return None

    def _sweep(self, now: float) -> None:
        if now - self._last_sweep < self.window:
            return
        self._last_sweep = now
        for key in [k for k, hits in self._hits.items() if not hits or hits[-1] <= now - self.window]:
            del self._hits[key]

    def forget_last(self, key: str) -> None:
        """Take back the newest hit of ``key`` (one that turned out not to count)."""
        hits = self._hits.get(key)
        if hits:
            hits.pop()
