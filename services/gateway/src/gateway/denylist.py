"""Users whose still-unexpired access tokens must be refused (docs/api-guide.md, section 2).

Fed from ``user.deleted`` / ``user.merged`` on every replica, and locally at once when this replica
proxied the deleting request. An entry only has to outlive the tokens issued before the deletion, so it
is dropped ``retention_seconds`` (token lifetime plus clock skew) after the deletion: memory stays
bounded by the deletions of one token lifetime.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from gateway.metrics import DENIED_USERS


class DenyList:
    def __init__(self, *, retention_seconds: float, clock: Callable[[], float] = time.time) -> None:
        self.retention_seconds = retention_seconds
        self._clock = clock
        self._until: dict[uuid.UUID, float] = {}
        self._next_prune = 0.0

    def deny(self, user_id: uuid.UUID, *, since: float | None = None) -> bool:
        """Deny ``user_id`` from ``since`` (epoch seconds, default now); False if already past retention."""
        now = self._clock()
        until = (now if since is None else since) + self.retention_seconds
        if until <= now:
            return False
        self._until[user_id] = max(until, self._until.get(user_id, 0.0))
        self._prune(now)
        DENIED_USERS.set(len(self._until))
        return True

    def is_denied(self, user_id: uuid.UUID) -> bool:
        until = self._until.get(user_id)
        if until is None:
            return False
        if until <= self._clock():
            self._until.pop(user_id, None)
            return False
        return True

    def __len__(self) -> int:
        return len(self._until)

    def _prune(self, now: float) -> None:
        if now < self._next_prune:
            return
        self._next_prune = now + 60.0
        for user_id in [u for u, until in self._until.items() if until <= now]:
            del self._until[user_id]
