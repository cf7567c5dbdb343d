"""Fixtures of the client unit tests: an in-memory fake service and clients wired to it."""

from __future__ import annotations

import random
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

# Sibling helper module: pytest runs with --import-mode=importlib, which does not put test
# directories on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from client_fakes import FakeServer  # noqa: E402

from bookmark_client import BookmarkClient  # noqa: E402


class Sleeps(list[float]):
    """Records requested delays instead of waiting: the tests check the schedule, never the clock."""

    async def __call__(self, delay: float) -> None:
        self.append(delay)


@pytest.fixture
def fake() -> FakeServer:
    return FakeServer()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
async def make_client(
    fake: FakeServer, sleeps: Sleeps, tmp_path: Path
) -> AsyncIterator[Callable[..., Awaitable[BookmarkClient]]]:
    opened: list[BookmarkClient] = []

    async def make(name: str = "device", **kwargs: object) -> BookmarkClient:
        client = BookmarkClient(
            "http://bookmarks.test",
            store_path=tmp_path / f"{name}.sqlite",
            transport=fake.transport(),
            sleep=sleeps,
            rng=random.Random(7),
            **kwargs,  # type: ignore[arg-type]
        )
        opened.append(await client.open())
        return client

    yield make
    for client in opened:
        await client.close()
