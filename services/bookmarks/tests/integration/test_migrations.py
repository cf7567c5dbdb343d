"""Migration 0002 upgrades a database made by 0001 as it was released (before the library model)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from bookmarks.migrate import MIGRATIONS_DIR
from common.migrations import upgrade_head


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


def _head() -> str:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None
    return head


async def test_0002_adds_the_library_model_to_a_0001_database(infra: Any) -> None:
    base = make_url(infra.dsn("bookmarks"))
    name = f"migration_{uuid.uuid4().hex[:12]}"
    url = base.set(database=name).render_as_string(hide_password=False)
    await _execute(base.render_as_string(hide_password=False), f'CREATE DATABASE "{name}"', autocommit=True)
    try:
        await asyncio.to_thread(upgrade_head, migrations_dir=MIGRATIONS_DIR, url=url)
        # Back to the schema 0001 released: no library columns, no collections, one old bookmark.
        owner = uuid.uuid4()
        await _execute(
            url,
            "ALTER TABLE bookmarks DROP COLUMN user_tags, DROP COLUMN is_archived",
            "DROP TABLE collections",
            "UPDATE alembic_version SET version_num = '0001'",
            "INSERT INTO bookmarks (owner_uid, client_bookmark_id, url, normalized_url, domain, created_at, "
            f"updated_at) VALUES ('{owner}', 'old', 'https://o.example/', 'https://o.example/', 'o.example', "
            "now(), now())",
        )
        await asyncio.to_thread(upgrade_head, migrations_dir=MIGRATIONS_DIR, url=url)
        rows, collections, version = await _execute(
            url,
            "SELECT user_tags, is_archived FROM bookmarks",
            "SELECT count(*) FROM collections",
            "SELECT version_num FROM alembic_version",
        )
        assert rows == [([], False)]
        assert collections == [(0,)] and version == [(_head(),)]
    finally:
        await _execute(base.render_as_string(hide_password=False), f'DROP DATABASE "{name}" WITH (FORCE)',
                       autocommit=True)
