"""Fixtures of the black-box scenarios: the whole platform (``full_stack``) driven through the gateway.

Identity providers A and B are each played by a :class:`~devstack.testing.LocalJwksServer` started for the
session and passed to the stack through ``full_stack_env``; web pages come from :class:`e2e_support.LocalSite`
on 127.0.0.1 (the test environment sets ``ENRICHMENT_ALLOW_PRIVATE_NETWORKS=true``). One stack serves
the whole session, so the browser mode is ``auto``: enrichment uses the headless Chromium when the
machine has one, and the scenario that needs it skips otherwise.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

# The sibling helper module: pytest runs with --import-mode=importlib, which does not put test
# directories on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from e2e_support import LocalSite  # noqa: E402

from devstack.testing import LocalJwksServer  # noqa: E402

E2E_DIR = Path(__file__).resolve().parent
# Starting the stack on a busy 2-core machine can take minutes; it counts against the first test.
E2E_TIMEOUT_SECONDS = 900


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if E2E_DIR in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.e2e)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(E2E_TIMEOUT_SECONDS))


@pytest.fixture(scope="session")
def idp_a() -> Iterator[LocalJwksServer]:
    server = LocalJwksServer(issuer="https://idp-a.e2e.invalid", audience="bookmarks-e2e").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def idp_b() -> Iterator[LocalJwksServer]:
    # Configured so that the fuzzed /v1/auth/oauth/idp-b meets a working provider, not a 503 "disabled".
    server = LocalJwksServer(issuer="https://idp-b.e2e.invalid", audience="bookmarks-e2e-b").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def full_stack_env(idp_a: LocalJwksServer, idp_b: LocalJwksServer) -> dict[str, str]:
    return {
        "IDP_A_JWKS_URL": idp_a.jwks_url,
        "IDP_A_ISSUER": idp_a.issuer,
        "IDP_A_AUDIENCE": idp_a.audience,
        "IDP_B_JWKS_URL": idp_b.jwks_url,
        "IDP_B_ISSUER": idp_b.issuer,
        "IDP_B_AUDIENCE": idp_b.audience,
        "ENRICHMENT_BROWSER": "auto",
        # A first failing link check is confirmed 3.6 s later instead of a day (the link health journeys).
        "LINK_CHECK_RETRY_HOURS": "0.001",
    }


@pytest.fixture(scope="session")
def stack(full_stack: Any, full_stack_env: dict[str, str]) -> Any:
    """``full_stack``, checked to run with this directory's identity provider.

    ``full_stack`` is session-scoped: if a test of another directory started it first, it runs with that
    directory's ``full_stack_env`` and idp-a sign-ins here would fail with 503. Say so instead.
    """
    extra = full_stack.config.extra_env
    mismatched = sorted(k for k, v in full_stack_env.items() if extra.get(k) != v)
    if mismatched:
        pytest.fail(
            f"full_stack was started without this conftest's {mismatched}: run tests/e2e in its own pytest process"
        )
    return full_stack


@pytest.fixture(scope="session")
def site() -> Iterator[LocalSite]:
    server = LocalSite().start()
    yield server
    server.stop()


@pytest.fixture
async def http(stack: Any) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the gateway only (trust_env=False: a proxy from the shell must not intercept it)."""
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=60.0, trust_env=False) as client:
        yield client
