"""The database gate of ``create_session_factory``: at most N sessions open, the rest served in arrival
order, nesting without a second permit, and every permit given back. Sessions are opened and closed
without a statement, so no connection is ever made (the engine's server does not exist)."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from common.db import SessionFactory, create_engine, create_session_factory


@pytest.fixture
async def engine() -> AsyncEngine:
    engine = create_engine("postgresql+asyncpg://nobody@127.0.0.1:9/none")
    yield engine  # type: ignore[misc]
    await engine.dispose()


async def _hold(
    sessions: SessionFactory, name: str, order: list[str], open_now: list[int], release: asyncio.Event
) -> None:
    async with sessions():
        order.append(name)
        open_now[0] += 1
        open_now[1] = max(open_now[1], open_now[0])
        await release.wait()
        open_now[0] -= 1


async def test_at_most_n_sessions_are_open_and_the_others_enter_in_arrival_order(engine: AsyncEngine) -> None:
    sessions = create_session_factory(engine, concurrency=2)
    order: list[str] = []
    open_now = [0, 0]
    gates = [asyncio.Event() for _ in range(6)]
    tasks = []
    for i in range(6):
        tasks.append(asyncio.create_task(_hold(sessions, f"s{i}", order, open_now, gates[i])))
        await asyncio.sleep(0)  # arrival order is creation order
    await asyncio.sleep(0.01)
    assert order == ["s0", "s1"]
    # Release out of order: whoever waited longest enters next, never a later arrival.
    for i in (1, 0, 3, 2, 5, 4):
        gates[i].set()
        await asyncio.sleep(0.01)
    await asyncio.gather(*tasks)
    assert order == [f"s{i}" for i in range(6)]
    assert open_now == [0, 2]


async def test_a_late_arrival_does_not_overtake_a_waiting_session(engine: AsyncEngine) -> None:
    sessions = create_session_factory(engine, concurrency=1)
    order: list[str] = []
    open_now = [0, 0]
    first, second, third = asyncio.Event(), asyncio.Event(), asyncio.Event()
    a = asyncio.create_task(_hold(sessions, "a", order, open_now, first))
    await asyncio.sleep(0.01)
    b = asyncio.create_task(_hold(sessions, "b", order, open_now, second))
    await asyncio.sleep(0.01)
    first.set()  # the permit goes to b, waiting; c arrives in the same instant and must queue behind it
    c = asyncio.create_task(_hold(sessions, "c", order, open_now, third))
    second.set()
    third.set()
    await asyncio.gather(a, b, c)
    assert order == ["a", "b", "c"]


async def test_nested_sessions_and_tasks_started_inside_one_take_no_second_permit(engine: AsyncEngine) -> None:
    sessions = create_session_factory(engine, concurrency=1)

    async def inner() -> str:
        async with sessions():
            return "inner"

    async def outer() -> list[str]:
        async with sessions():
            async with sessions():
                nested = "nested"
            return [nested, await asyncio.create_task(inner())]

    assert await asyncio.wait_for(outer(), 1.0) == ["nested", "inner"]
    # And the one permit is free again.
    assert await asyncio.wait_for(inner(), 1.0) == "inner"


async def test_a_failing_unit_of_work_gives_its_permit_back(engine: AsyncEngine) -> None:
    sessions = create_session_factory(engine, concurrency=1)
    for _ in range(3):
        with pytest.raises(ValueError):
            async with sessions():
                raise ValueError("the unit of work failed")
    async with asyncio.timeout(1.0), sessions():
        pass


async def test_a_session_used_without_async_with_takes_no_permit(engine: AsyncEngine) -> None:
    sessions = create_session_factory(engine, concurrency=1)
    held = sessions()  # an export's long snapshot: closed by its stream, not a permit holder
    try:
        async with asyncio.timeout(1.0), sessions():
            pass
    finally:
        await held.close()
