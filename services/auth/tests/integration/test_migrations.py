"""Migrations upgrade databases as earlier releases left them: 0002 (pairing codes)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine


async def _execute(url: str, *statements: str, autocommit: bool = False) -> list[Any]:
    engine = create_async_engine(url, isolation_level="AUTOCOMMIT" if autocommit else "READ COMMITTED")
    results: list[Any] = []
    try:
        async with engine.begin() as connection:
            for statement in statements:
                result = await connection.execute(text(statement))
                results.append(result.all() if result.returns_rows else None)
    finally:
        await engine.dispose()
    return results


async def _migrate(infra: Any, url: str) -> None:
    # In a child process, as deployments run it: revision 0001 defines the auth tables on SQLModel's
    # shared metadata, which must not meet another service's tables of the same name in this process.
    await asyncio.to_thread(infra.run_migrations, {"auth": url})


async def test_0002_adds_the_pairing_codes_table(infra: Any) -> None:
    base = make_url(infra.dsn("auth"))
    name = f"migration_{uuid.uuid4().hex[:12]}"
    url = base.set(database=name).render_as_string(hide_password=False)
    admin = base.render_as_string(hide_password=False)
    await _execute(admin, f'CREATE DATABASE "{name}"', autocommit=True)
    try:
        await _migrate(infra, url)
        await _execute(url, "DROP TABLE pairing_codes", "UPDATE alembic_version SET version_num = '0001'")

        await _migrate(infra, url)

        columns, indexes, version = await _execute(
            url,
            "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
            "WHERE table_name = 'pairing_codes' ORDER BY ordinal_position",
            "SELECT indexname FROM pg_indexes WHERE tablename = 'pairing_codes' ORDER BY indexname",
            "SELECT version_num FROM alembic_version",
        )
        assert columns == [
            ("code_hash", "bytea", "NO"),
            ("user_id", "uuid", "NO"),
            ("created_at", "timestamp with time zone", "NO"),
            ("expires_at", "timestamp with time zone", "NO"),
        ]
        assert [r[0] for r in indexes] == ["ix_pairing_codes_expires", "ix_pairing_codes_user", "pairing_codes_pkey"]
        assert version == [("0002",)]
    finally:
        await _execute(admin, f'DROP DATABASE "{name}" WITH (FORCE)', autocommit=True)
