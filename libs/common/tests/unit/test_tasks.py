"""Background loops stop on shutdown, and a stuck one cannot hang it."""

from __future__ import annotations

import asyncio

from common.tasks import BackgroundTasks, wait_for_event


async def test_wait_for_event() -> None:
    event = asyncio.Event()
    assert await wait_for_event(event, 0.01) is False
    event.set()
    assert await wait_for_event(event, 0.01) is True


async def test_cancelling_a_waiter_is_never_swallowed() -> None:
    """The event keeps completing around the moment the cancellation arrives; the loop still stops."""
    event = asyncio.Event()

    async def waiter() -> None:
        while True:
            await wait_for_event(event, 0.001)
            event.clear()

    async def setter() -> None:
        while True:
            event.set()
            await asyncio.sleep(0)

    tasks = BackgroundTasks()
    loop_task = tasks.start("waiter", waiter())
    tasks.start("setter", setter())
    await asyncio.sleep(0.05)
    await tasks.stop(grace_seconds=5)
    assert loop_task.cancelled()


async def test_a_loop_that_ignores_cancellation_does_not_hang_shutdown() -> None:
    release = asyncio.Event()

    async def stubborn() -> None:
        while not release.is_set():
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                continue  # a buggy loop

    tasks = BackgroundTasks()
    task = tasks.start("stubborn", stubborn())
    await asyncio.sleep(0.02)
    await tasks.stop(grace_seconds=0.2)
    assert not task.done()
    release.set()
    await task
