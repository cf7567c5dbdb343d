"""Long-running background loops of a process (outbox relay, consumers, workers), started in the
lifespan and cancelled cleanly on shutdown."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger("common.tasks")


class BackgroundTasks:
    def __init__(self) -> None:
        self._tasks: list[asyncio.Task[Any]] = []

    def start(self, name: str, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro, name=name)
        task.add_done_callback(self._report)
        self._tasks.append(task)
        return task

    @staticmethod
    def _report(task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s died", task.get_name(), exc_info=task.exception())

    async def stop(self, grace_seconds: float = 15.0) -> None:
        """Cancel every loop and wait for them; one that will not stop is reported, never waited on
        forever (shutdown must finish within the orchestrator's grace period)."""
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            _, stuck = await asyncio.wait(self._tasks, timeout=grace_seconds)
            for task in stuck:
                log.error("background task %s did not stop within %.0fs", task.get_name(), grace_seconds)
        self._tasks.clear()


async def wait_for_event(event: asyncio.Event, seconds: float) -> bool:
    """Wait until ``event`` is set or ``seconds`` pass; True when it was set.

    Not ``asyncio.wait_for``: on Python 3.11 it can swallow a cancellation that races with the event
    completing (bpo-42130), and a loop built on it then never stops.
    """
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
        return True
    except TimeoutError:
        return False
