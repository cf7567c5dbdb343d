"""What every service's migration tests do: build a database with a service's revisions on the test
PostgreSQL, compare it with the service's models, and run statements on it.

- :func:`scratch_database` a new empty database on the ``infra`` PostgreSQL (its URL), dropped afterwards.
- :func:`upgrade_to` runs the service's chain up to a revision (Alembic runs its own event loop, so in a
  thread).
- :func:`schema_problems` every difference Alembic's autogenerate finds between the database and the
  models, the functions, triggers and unmodelled indexes the catalog lacks (or has unlisted), and the
  indexes PostgreSQL defines otherwise than the models (a partial index's WHERE clause).
- :func:`execute` plain SQL, as an older release would have written it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from common.migrations import Schema, upgrade
from devstack.postgres import EmbeddedPostgres


@asynccontextmanager
async def scratch_database(postgres: EmbeddedPostgres, prefix: str) -> AsyncIterator[str]:
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    await asyncio.to_thread(postgres.ensure_databases, [name])
    try:
        yield postgres.dsn(name)
    finally:
        await asyncio.to_thread(postgres.psql, "postgres", f'DROP DATABASE "{name}" WITH (FORCE)')


async def upgrade_to(migrations_dir: Path, url: str, revision: str) -> None:
    await asyncio.to_thread(upgrade, migrations_dir=migrations_dir, url=url, revision=revision)


@asynccontextmanager
async def engine_on(url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(url)
    try:
        yield engine
    finally:
        await engine.dispose()


async def schema_problems(url: str, schema: Schema) -> list[Any]:
    async with engine_on(url) as engine, engine.connect() as connection:
        differences = await connection.run_sync(schema.differences)
        catalog = await connection.run_sync(schema.missing_catalog_objects)
        indexes = await connection.run_sync(schema.index_mismatches)
    return [*differences, *catalog.items(), *indexes.items()]


async def execute(url: str, *statements: str) -> list[Any]:
    """Run ``statements`` in one transaction; each one's rows (None for a statement without)."""
    results: list[Any] = []
    async with engine_on(url) as engine, engine.begin() as connection:
        for statement in statements:
            result = await connection.execute(text(statement))
            results.append(result.all() if result.returns_rows else None)
    return results
