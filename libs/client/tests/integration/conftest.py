"""Integration fixtures of the client.

``full_stack`` (devstack.pytest_plugin) runs the whole platform. Two devices of one user need an
identity both can sign in with (an anonymous account lives on one device only), so identity provider
A is played by a :class:`~devstack.testing.LocalJwksServer` and the stack is pointed at it through
``full_stack_env``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devstack.testing import LocalJwksServer

# The in-memory fake service of the unit tests, reused by the loopback WebSocket tests (pytest runs with
# --import-mode=importlib, which does not put test directories on sys.path).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "unit"))


@pytest.fixture(scope="session")
def idp_a() -> Iterator[LocalJwksServer]:
    server = LocalJwksServer(issuer="https://idp-a.client-tests.invalid", audience="bookmarks-client-tests").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def full_stack_env(idp_a: LocalJwksServer) -> dict[str, str]:
    return {
        "IDP_A_JWKS_URL": idp_a.jwks_url,
        "IDP_A_ISSUER": idp_a.issuer,
        "IDP_A_AUDIENCE": idp_a.audience,
    }


@pytest.fixture
def stack(full_stack: Any, full_stack_env: dict[str, str]) -> Any:
    """``full_stack``, checked to run with this directory's identity provider.

    ``full_stack`` is session-scoped: if a test elsewhere in the same pytest run started it first, it
    runs with that directory's ``full_stack_env`` and idp-a sign-ins here would fail with 503. Say so.
    """
    extra = full_stack.config.extra_env
    mismatched = {k for k, v in full_stack_env.items() if extra.get(k) != v}
    if mismatched:
        pytest.fail(
            f"full_stack was started without this conftest's {sorted(mismatched)}: run libs/client/tests/integration "
            "in its own pytest process"
        )
    return full_stack
