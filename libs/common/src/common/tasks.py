"""Long-running background loops of a process (outbox relay, consumers, workers), started in the
lifespan and cancelled cleanly on shutdown."""

from __future__ import annotations

import asyncio
import contextlib
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

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
