"""Run a coroutine to completion from synchronous code, even when called inside a running event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_blocking(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``factory()`` on a private event loop in a helper thread and return its result.

    The stack's API is synchronous (start-up code, pytest fixtures), yet an async test may call it
    (``infra.start_broker()``) while its own loop runs, where ``asyncio.run`` refuses to work. Even
    without a running loop, ``asyncio.run`` in the caller's thread would reset that thread's current
    event loop, which pytest-asyncio may have set. A helper thread avoids both; the caller is blocked
    meanwhile, which suits set-up steps.
    """
    result: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(asyncio.run(factory()))
        except BaseException as exc:  # re-raised in the caller's thread below
            failure.append(exc)

    thread = threading.Thread(target=target, name="devstack-run-blocking", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]
