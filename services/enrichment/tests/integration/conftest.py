"""Fixtures of the enrichment integration tests: real PostgreSQL, broker and auth; a fake web site."""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

# Sibling helper module: pytest runs with --import-mode=importlib, which does not put test
# directories on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from enrichment_support import (  # noqa: E402
    Api,
    AuthUsers,
    Db,
    MutableClock,
    Site,
    auth_app,
    build_site,
    consumer_started,
    enrichment_settings,
)

from devstack.testing import eventually, serve_app  # noqa: E402
from enrichment.main import create_app  # noqa: E402


@pytest.fixture(scope="session")
async def site() -> AsyncIterator[Site]:
    state = Site()
    async with serve_app(build_site(state)) as base_url:
        state.base_url = base_url
        yield state


@pytest.fixture(scope="session")
async def auth_url(infra: Any) -> AsyncIterator[str]:
    async with serve_app(auth_app(infra)) as base_url:
        yield base_url


@pytest.fixture(scope="session")
async def users(auth_url: str) -> AsyncIterator[AuthUsers]:
    harness = AuthUsers(auth_url)
    yield harness
    await harness.http.aclose()


@pytest.fixture(scope="session")
async def api(infra: Any, auth_url: str) -> AsyncIterator[Api]:
    """The enrichment API on its own database (no worker runs there: jobs stay where tests put them)."""
    db = Db(infra.fresh_database("enrichment"))
    clock = MutableClock()
    app = create_app(
        enrichment_settings(infra, db.url, auth_url=auth_url), clock=clock, consumer_group=f"enrichment-{uuid.uuid4()}"
    )
    async with serve_app(app) as base_url, httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        await eventually(lambda: consumer_started(app), timeout=60)
        yield Api(base_url=base_url, http=http, clock=clock, db=db)
    await db.close()


@pytest.fixture
def bid() -> Callable[[], str]:
    """Fresh bookmark ids."""
    return lambda: f"bm-{uuid.uuid4().hex[:12]}"
