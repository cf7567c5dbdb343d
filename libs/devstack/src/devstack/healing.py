"""``make run`` heals like a kubelet: a dead child is restarted with backoff.

:class:`Healer` watches the components of a started :class:`devstack.stack.Stack` — PostgreSQL, the
broker, every service and the enrichment worker — and restarts whichever died, in that order (a service
restarted before its database would only fail again). Each component waits
:func:`next_restart_delay` before its restart: doubling from :data:`FIRST_DELAY` while it keeps dying,
back to the first delay once it stayed up for :data:`HEALTHY_SECONDS`.

Restarts run on the thread that calls :meth:`Healer.check` (``make run``: the main thread), which must
live as long as the children: their parent-death signal follows the spawning thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["FIRST_DELAY", "HEALTHY_SECONDS", "MAX_DELAY", "Component", "Healer", "next_restart_delay"]

log = logging.getLogger("devstack.healing")

FIRST_DELAY = 0.5
MAX_DELAY = 30.0
HEALTHY_SECONDS = 60.0


def next_restart_delay(previous: float, *, healthy_for: float, healthy_after: float = HEALTHY_SECONDS) -> float:
    """How long to wait before restarting a component that died after running ``healthy_for`` seconds."""
    if previous <= 0 or healthy_for >= healthy_after:
        return FIRST_DELAY
    return min(previous * 2, MAX_DELAY)


@dataclass(frozen=True)
class Component:
    """Something the healer keeps alive: its name, a liveness test and how to restart it."""

    name: str
    alive: Callable[[], bool]
    restart: Callable[[], None]


@dataclass
class _State:
    started_at: float
    delay: float = 0.0
    dead_since: float | None = None
    restarts: int = 0


class Healer:
    def __init__(
        self,
        components: list[Component],
        *,
        clock: Callable[[], float] = time.monotonic,
        healthy_seconds: float = HEALTHY_SECONDS,
    ) -> None:
        self.components = components
        self.healthy_seconds = healthy_seconds
        self._clock = clock
        now = clock()
        self._states = {c.name: _State(started_at=now) for c in components}

    def restarts(self, name: str) -> int:
        return self._states[name].restarts

    def check(self) -> list[str]:
        """Restart what is due; return the names restarted. A failed restart is retried later."""
        restarted: list[str] = []
        for component in self.components:
            if self._heal(component):
                restarted.append(component.name)
        return restarted

    def _heal(self, component: Component) -> bool:
        state = self._states[component.name]
        now = self._clock()
        if component.alive():
            state.dead_since = None
            return False
        if state.dead_since is None:
            state.dead_since = now
            state.delay = next_restart_delay(
                state.delay, healthy_for=now - state.started_at, healthy_after=self.healthy_seconds
            )
            log.warning("%s died; restarting in %.1fs", component.name, state.delay)
        if now - state.dead_since < state.delay:
            return False
        state.restarts += 1
        state.started_at = self._clock()
        state.dead_since = None
        try:
            component.restart()
        except Exception as exc:  # e.g. its port still busy: it counts as dying again right away
            log.error("restarting %s failed: %s", component.name, exc)
            return False
        return True
