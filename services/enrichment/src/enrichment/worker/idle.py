"""Idle slots of a worker loop: one polls, the others wait for it or for a notification.

Slots that found no work would each poll the database every ``poll_seconds`` for the same nothing. Here
one idle slot at a time polls; the others wait. A notification (``notify``: a job was inserted) wakes
every idle slot, and so does a poll that finds work (due work comes in groups: the others look too).
"""

from __future__ import annotations

import asyncio

from common.tasks import wait_for_event


class IdleSlots:
    def __init__(self, poll_seconds: float) -> None:
        self.poll_seconds = poll_seconds
        self._event = asyncio.Event()
        self._poller_idle = False

    def current(self) -> asyncio.Event:
        """The generation a slot takes *before* it looks for work, so a notification that arrives while it
        looks is not lost."""
        return self._event

    def notify(self) -> None:
        """Wake every idle slot."""
        self._event.set()
        self._event = asyncio.Event()

    async def wait(self, idle: asyncio.Event) -> bool:
        """Wait, having found no work since ``idle`` was current; True when this slot woke to poll."""
        if self._poller_idle:
            await idle.wait()
            return False
        self._poller_idle = True
        try:
            return not await wait_for_event(idle, self.poll_seconds)
        finally:
            self._poller_idle = False
