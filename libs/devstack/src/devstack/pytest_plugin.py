"""pytest fixtures backed by the local stack (loaded for every run via ``-p devstack.pytest_plugin``).

Session-scoped and lazy: nothing starts unless a test asks for a fixture. Each fixture gets its own data
directory under pytest's temp dir (PostgreSQL's own under the system temp dir when running as root, see
:func:`devstack.postgres.scratch_data_dir`) and free ports, so tests never touch a running ``make run``.

``infra``
    A started infrastructure-only :class:`devstack.stack.Stack`: ``infra.dsn("auth")`` (databases
    created and migrated; a service without a ``migrate`` module yet is skipped),
    ``infra.kafka_bootstrap``, ``infra.env`` (every ``DATABASE_URL_*`` and ``KAFKA_BOOTSTRAP_SERVERS``),
    ``infra.stop_broker()`` / ``infra.start_broker()`` (same port, topics re-created),
    ``infra.fresh_database("bookmarks")`` (a new migrated database, returns its URL),
    ``infra.postgres`` (the :class:`devstack.postgres.EmbeddedPostgres`: ``ensure_databases``, ``dsn``).

``idp_a``
    Identity provider A (a :class:`devstack.testing.LocalJwksServer`): ``full_stack`` always trusts it, so
    ``idp_a.mint(sub=..., claims=...)`` gives ID tokens for ``/v1/auth/oauth/idp-a``.

``full_stack``
    A started :class:`devstack.stack.Stack` with every service: ``full_stack.gateway_url``,
    ``full_stack.service_url(name)``, plus everything ``infra`` has. Its services get
    :data:`FULL_STACK_TEST_ENV`, then whatever the ``full_stack_env`` fixture returns: override that
    fixture (session scope) in a ``conftest.py`` to add variables.

``pg_data_dir``
    Function-scoped: a data directory for a test's own ``EmbeddedPostgres``. Use it rather than
    ``tmp_path`` (see :func:`devstack.postgres.scratch_data_dir`).

Only the standard library and pytest are imported at module level: this module loads in every run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from devstack.stack import Stack
    from devstack.testing import LocalJwksServer

FULL_STACK_TEST_ENV: dict[str, str] = {
    "ENRICHMENT_ALLOW_PRIVATE_NETWORKS": "true",
    "ENRICHMENT_RETRY_DELAYS_SECONDS": "1,2",
    "ADMIN_TOKEN": "test-admin-token",
    "GATEWAY_RATE_LIMIT_PER_MINUTE": "100000",
    "GATEWAY_IP_RATE_LIMIT_PER_MINUTE": "100000",
    "AUTH_ANONYMOUS_RATE_LIMIT_PER_MINUTE": "100000",
    "AUTH_PAIRING_CLAIM_FAILURES_PER_MINUTE": "100000",
}


def _run_stack(
    tmp_path_factory: pytest.TempPathFactory, name: str, *, services: bool, extra_env: dict[str, str]
) -> Iterator[Stack]:
    from devstack.postgres import scratch_data_dir
    from devstack.stack import Stack, StackConfig

    data_dir = tmp_path_factory.mktemp(name)
    with scratch_data_dir(f"{name}-", fallback=data_dir / "postgres") as pg_data_dir:
        config = StackConfig.for_tests(data_dir, services=services, extra_env=extra_env, pg_data_dir=pg_data_dir)
        stack = Stack(config)
        stack.start()
        try:
            yield stack
        finally:
            stack.stop()


@pytest.fixture(scope="session")
def infra(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """PostgreSQL with the service databases (migrated) and the broker with every topic."""
    yield from _run_stack(tmp_path_factory, "devstack-infra", services=False, extra_env={})


@pytest.fixture(scope="session")
def idp_a() -> Iterator[LocalJwksServer]:
    """Identity provider A, played by a local JWKS server; ``full_stack`` is always configured with it,
    so every suite signs in against the same stack whichever suite started it first."""
    from devstack.testing import LocalJwksServer

    server = LocalJwksServer(issuer="https://idp-a.test.invalid", audience="bookmarks-tests").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def full_stack_env() -> dict[str, str]:
    """Extra environment for the ``full_stack`` services; override in a conftest to add variables."""
    return {}


@pytest.fixture(scope="session")
def full_stack(
    tmp_path_factory: pytest.TempPathFactory, full_stack_env: dict[str, str], idp_a: LocalJwksServer
) -> Iterator[Stack]:
    """The whole platform as ``make run`` starts it, on free ports; base URL at ``.gateway_url``."""
    trusted_idp = {
        "IDP_A_JWKS_URL": idp_a.jwks_url,
        "IDP_A_ISSUER": idp_a.issuer,
        "IDP_A_AUDIENCE": idp_a.audience,
    }
    env = {**FULL_STACK_TEST_ENV, **trusted_idp, **full_stack_env}
    yield from _run_stack(tmp_path_factory, "devstack-full", services=True, extra_env=env)


@pytest.fixture
def pg_data_dir(tmp_path: Path) -> Iterator[Path]:
    """A data directory for a test's own ``EmbeddedPostgres`` (reachable by the server even as root)."""
    from devstack.postgres import scratch_data_dir

    with scratch_data_dir(fallback=tmp_path / "pgdata") as path:
        yield path
