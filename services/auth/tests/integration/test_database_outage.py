"""PostgreSQL stopped under load: every request answers 503 unavailable + Retry-After (never 500), and the
service recovers by itself once the database is back. The mapping lives in
libs/common (common.outages + common.handlers), so it is the same in every service."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from auth.migrate import MIGRATIONS_DIR
from auth.settings import Settings
from common.migrations import upgrade_head
from devstack.postgres import EmbeddedPostgres
from devstack.testing import eventually, free_port


@pytest.fixture
def own_postgres(pg_data_dir: Path) -> Iterator[EmbeddedPostgres]:
    """A PostgreSQL of this test's own: stopping it cannot disturb the other tests."""
    server = EmbeddedPostgres(pg_data_dir, free_port(), durable=False)
    server.start()
    server.ensure_databases(["auth"])
    upgrade_head(migrations_dir=MIGRATIONS_DIR, url=server.dsn("auth"))
    yield server
    server.stop()


async def _hammer(client: httpx.AsyncClient, stop: asyncio.Event, seen: Counter[int], bad: list[str]) -> None:
    while not stop.is_set():
        response = await client.post("/v1/auth/anonymous")
        seen[response.status_code] += 1
        if response.status_code != 200 and (
            response.status_code != 503
            or response.json().get("code") != "unavailable"
            or int(response.headers.get("retry-after", "0")) < 1
        ):
            bad.append(f"{response.status_code} {response.text[:200]}")
        await asyncio.sleep(0.02)


def _reached(seen: Counter[int], status: int, count: int) -> Callable[[], Any]:
    async def check() -> bool:
        return seen[status] >= count

    return check


async def test_database_outage_is_503_then_recovers(
    own_postgres: EmbeddedPostgres, make_settings: Callable[..., Settings], run_app: Callable[[Settings], Any]
) -> None:
    settings = make_settings(database_url=own_postgres.dsn("auth"))
    async with run_app(settings) as client:
        assert (await client.post("/v1/auth/anonymous")).status_code == 200
        seen: Counter[int] = Counter()
        bad: list[str] = []
        stop = asyncio.Event()
        workers = [asyncio.create_task(_hammer(client, stop, seen, bad)) for _ in range(3)]
        try:
            # Stopped while requests are in flight: some are cut mid-query, the rest cannot connect.
            await asyncio.to_thread(own_postgres.stop)
            await eventually(_reached(seen, 503, seen[503] + 20), timeout=60)
            await asyncio.to_thread(own_postgres.start)
            await eventually(_reached(seen, 200, seen[200] + 5), timeout=60)
        finally:
            stop.set()
            await asyncio.gather(*workers)
    assert bad == [], bad[:5]
    assert seen[500] == 0 and seen[503] >= 20, seen
