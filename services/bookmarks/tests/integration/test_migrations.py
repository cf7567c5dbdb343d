"""Migrations upgrade databases as earlier releases left them: 0002 (library model), 0005 (search configs),
0006 (stored wire documents), 0007 (lookup index)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
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


@asynccontextmanager
async def _database_at_head(infra: Any) -> AsyncIterator[str]:
    """A new database migrated to head (its URL), dropped afterwards."""
    base = make_url(infra.dsn("bookmarks"))
    name = f"migration_{uuid.uuid4().hex[:12]}"
    url = base.set(database=name).render_as_string(hide_password=False)
    await _execute(base.render_as_string(hide_password=False), f'CREATE DATABASE "{name}"', autocommit=True)
    try:
        await asyncio.to_thread(upgrade_head, migrations_dir=MIGRATIONS_DIR, url=url)
        yield url
    finally:
        await _execute(
            base.render_as_string(hide_password=False), f'DROP DATABASE "{name}" WITH (FORCE)', autocommit=True
        )


# What 0006 adds, taken away again to go back to an earlier release.
_BEFORE_0006 = (
    "DROP TRIGGER bookmarks_wire_document ON bookmarks",
    "DROP FUNCTION bookmark_wire_document()",
    "ALTER TABLE bookmarks DROP COLUMN wire_document",
)


def _bookmark(owner: uuid.UUID, bookmark_id: str, extra_columns: str = "", extra_values: str = "") -> str:
    return (
        f"INSERT INTO bookmarks (owner_uid, client_bookmark_id, url, normalized_url, domain, created_at, "
        f"updated_at{extra_columns}) VALUES ('{owner}', '{bookmark_id}', 'https://o.example/', "
        f"'https://o.example/', 'o.example', now(), now(){extra_values})"
    )


async def test_0002_adds_the_library_model_to_a_0001_database(infra: Any) -> None:
    async with _database_at_head(infra) as url:
        # Back to the schema 0001 released: no library columns, no collections, one old bookmark.
        owner = uuid.uuid4()
        await _execute(
            url,
            *_BEFORE_0006,
            "ALTER TABLE bookmarks DROP COLUMN user_tags, DROP COLUMN is_archived",
            "DROP TABLE collections",
            "UPDATE alembic_version SET version_num = '0001'",
            _bookmark(owner, "old"),
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


async def test_0005_gives_each_user_the_page_languages_of_their_bookmarks(infra: Any) -> None:
    async with _database_at_head(infra) as url:
        german, plain = uuid.uuid4(), uuid.uuid4()
        await _execute(
            url,
            *_BEFORE_0006,
            "ALTER TABLE user_streams DROP COLUMN search_configs",
            "UPDATE alembic_version SET version_num = '0004'",
            f"INSERT INTO user_streams (owner_uid, last_position) VALUES ('{german}', now()), ('{plain}', now())",
            _bookmark(german, "de", ", search_config", ", 'german'"),
            _bookmark(german, "fr", ", search_config", ", 'french'"),
            _bookmark(german, "plain", ", search_config", ", 'simple'"),
            _bookmark(plain, "plain", ", search_config", ", 'simple'"),
        )
        await asyncio.to_thread(upgrade_head, migrations_dir=MIGRATIONS_DIR, url=url)
        (rows,) = await _execute(url, "SELECT owner_uid, search_configs FROM user_streams")
        assert {owner: sorted(configs) for owner, configs in rows} == {german: ["french", "german"], plain: []}


async def test_0006_renders_the_stored_document_of_every_bookmark_and_of_every_later_write(infra: Any) -> None:
    async with _database_at_head(infra) as url:
        owner = uuid.uuid4()
        await _execute(
            url,
            *_BEFORE_0006,
            "UPDATE alembic_version SET version_num = '0005'",
            _bookmark(owner, "old", ", title, tags", ", 'Old \"quoted\" title', '{a,b}'"),
        )
        await asyncio.to_thread(upgrade_head, migrations_dir=MIGRATIONS_DIR, url=url)
        before, nullable, _, after = await _execute(
            url,
            "SELECT wire_document || '}' FROM bookmarks",
            "SELECT is_nullable FROM information_schema.columns "
            "WHERE table_name = 'bookmarks' AND column_name = 'wire_document'",
            "UPDATE bookmarks SET title = 'New', is_favorite = true",
            "SELECT wire_document || '}' FROM bookmarks",
        )
        document = json.loads(before[0][0])
        assert document["ownerUid"] == str(owner) and document["clientBookmarkId"] == "old"
        assert document["title"] == 'Old "quoted" title' and document["tags"] == ["a", "b"]
        assert "saveWhy" not in document and nullable == [("NO",)]
        assert json.loads(after[0][0]) == document | {"title": "New", "isFavorite": True}


async def test_0007_adds_the_lookup_index(infra: Any) -> None:
    async with _database_at_head(infra) as url:
        await _execute(url, "DROP INDEX ix_bookmarks_live_url", "UPDATE alembic_version SET version_num = '0006'")
        await asyncio.to_thread(upgrade_head, migrations_dir=MIGRATIONS_DIR, url=url)
        [definition] = await _execute(url, "SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_bookmarks_live_url'")
    assert definition == [
        (
            "CREATE INDEX ix_bookmarks_live_url ON public.bookmarks USING btree "
            "(owner_uid, normalized_url, updated_at DESC) WHERE (deleted_at IS NULL)",
        )
    ]
