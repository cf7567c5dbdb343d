"""The bookmarks migrations: an empty database upgraded to head is what the models describe, and data a
previous release wrote survives the upgrade and reads correctly. Older schemas come from running the
real chain up to a revision, never from altering a newer one."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from alembic.command import downgrade
from sqlalchemy import Column, Integer
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel.sql.sqltypes import AutoString

from bookmarks.api import wire
from bookmarks.imports import store as import_store
from bookmarks.migrate import MIGRATIONS_DIR, schema
from bookmarks.search.folding import fold_function_sql
from bookmarks.store import lookups, repository
from bookmarks.store.tables import UNCOMPRESSED
from bookmarks.sync import documents, queries
from bookmarks.wire_migration import latest_function_sql, write_revision
from common.migrations import alembic_config, head_and_previous, next_revision_id
from devstack.migration_checks import engine_on, execute, schema_problems, scratch_database, upgrade_to
from devstack.new_migration import autogenerate

OWNER = uuid.UUID("00000000-0000-4000-8000-00000000b00c")
IMPORT = uuid.UUID("00000000-0000-4000-8000-0000000001a0")


@pytest.fixture
async def database(infra: Any) -> AsyncIterator[str]:
    async with scratch_database(infra.postgres, "bookmarks_migration") as url:
        yield url


async def test_an_empty_database_upgraded_to_head_is_what_the_models_describe(database: str) -> None:
    await upgrade_to(MIGRATIONS_DIR, database, "head")
    assert await schema_problems(database, schema()) == []
    # The functions the code generates are the ones the chain installed last (the models cannot say).
    names = "'bookmark_wire_document', 'search_fold'"
    (rows,) = await execute(database, f"SELECT proname, prosrc FROM pg_proc WHERE proname IN ({names})")
    installed = dict(rows)
    assert installed == {
        "bookmark_wire_document": _body(wire.document_function_sql()),
        "search_fold": _body(fold_function_sql()),
    }
    # Storage is not in what SQLAlchemy compares either: the columns marked UNCOMPRESSED are EXTERNAL.
    marked = {
        (table.name, c.name) for table in schema().metadata.tables.values() for c in table.c if c.info == UNCOMPRESSED
    }
    (rows,) = await execute(
        database,
        "SELECT c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attnum > 0 AND a.attstorage = 'e'",
    )
    assert {tuple(row) for row in rows} == marked
    assert ("bookmarks", "search_vector") in marked


def _body(function_sql: str) -> str:
    match = re.search(r"AS (\$\w*\$)(.*)\1", function_sql, re.DOTALL)
    assert match is not None
    return match.group(2)


def _bookmark(bookmark_id: str, updated_at: str, **columns: str) -> str:
    values = {
        "owner_uid": f"'{OWNER}'",
        "client_bookmark_id": f"'{bookmark_id}'",
        "url": f"'https://o.example/{bookmark_id}'",
        "normalized_url": f"'https://o.example/{bookmark_id}'",
        "domain": "'o.example'",
        "created_at": "'2026-11-20T09:00:00Z'",
        "updated_at": f"'{updated_at}'",
        **columns,
    }
    return f"INSERT INTO bookmarks ({', '.join(values)}) VALUES ({', '.join(values.values())})"


# What a previous release stores: plain SQL its schema accepts (the library model of 0002, the imports of
# 0003 and the search columns of 0004 are the oldest parts a release still running today has).
PREVIOUS_RELEASE_ROWS = (
    f"INSERT INTO user_streams (owner_uid, last_position, is_pro) VALUES ('{OWNER}', '2026-11-20T12:00:00Z', true)",
    "INSERT INTO collections (owner_uid, collection_id, name, parent_id, created_at, updated_at, deleted_at) VALUES "
    f"('{OWNER}', 'c1', 'Reading', NULL, '2026-11-20T09:00:00Z', '2026-11-20T10:00:00Z', NULL), "
    f"('{OWNER}', 'c2', 'Later', 'c1', '2026-11-20T09:00:00Z', '2026-11-20T10:00:01Z', NULL), "
    f"('{OWNER}', 'c3', 'Gone', NULL, '2026-11-20T09:00:00Z', '2026-11-20T10:00:02Z', '2026-11-20T10:00:02Z')",
    _bookmark(
        "b1",
        "2026-11-20T11:00:00.123456Z",
        title="'Économie \"quoted\" – ünïcode'",
        tags="'{news,tech}'",
        collection_ids="'{c1,c2}'",
        user_tags="'{À lire}'",
        is_archived="true",
        is_favorite="true",
        save_why="'for the talk'",
        notes="'line one\nline two'",
        client_saved_at="'2026-11-19T08:00:00Z'",
        enrichment_status="'completed'",
        enriched_at="'2026-11-20T11:00:00Z'",
        search_config="'french'",
    ),
    _bookmark("b2", "2026-11-20T11:00:01Z", deleted_at="'2026-11-20T11:00:01Z'"),
    _bookmark("b3", "2026-11-20T11:00:02Z", description="'plain'"),
    "INSERT INTO imports (id, owner_uid, status, requested_format, format, size_bytes, total, processed, created, "
    "next_ordinal, claims, created_at, finished_at) VALUES "
    f"('{IMPORT}', '{OWNER}', 'completed', 'auto', 'netscape', 120, 2, 2, 1, 2, 1, '2026-11-20T09:00:00Z', "
    "'2026-11-20T09:01:00Z')",
    f"INSERT INTO import_chunks (import_id, seq, data) VALUES ('{IMPORT}', 0, '\\x3c444c3e')",
    "INSERT INTO import_report (import_id, ordinal, line, url, outcome, reason, client_bookmark_id) VALUES "
    f"('{IMPORT}', 1, 3, 'https://o.example/b3', 'created', NULL, 'b3'), "
    f"('{IMPORT}', 2, 4, 'nota url', 'invalid', 'url_invalid', NULL)",
    "INSERT INTO pending_enrichments (owner_uid, client_bookmark_id, normalized_url, event) VALUES "
    f"('{OWNER}', 'b9', 'https://o.example/b9', '{{\"title\": \"Early\"}}')",
)


async def test_data_of_the_previous_release_survives_the_upgrade_to_head(database: str) -> None:
    head, previous = head_and_previous(MIGRATIONS_DIR)
    await upgrade_to(MIGRATIONS_DIR, database, previous or head)
    await execute(database, *PREVIOUS_RELEASE_ROWS)
    await upgrade_to(MIGRATIONS_DIR, database, "head")
    async with engine_on(database) as engine, AsyncSession(engine) as session:
        records = {b.client_bookmark_id: b for b in await repository.all_for_owner(session, OWNER)}
        folders = await repository.all_collections_for_owner(session, OWNER)
        page = await queries.delta_page(session, OWNER, None, 50, documents.DELTA_DOCUMENTS)
        job = await import_store.find_import(session, OWNER, IMPORT)
        report = await import_store.report_page(session, IMPORT, 0, 10)
        chunk = await import_store.read_chunk(session, IMPORT, 0)
        early = await repository.take_pending_enrichment(session, OWNER, "b9")
        pro = await lookups.is_pro(session, OWNER)
    b1 = records["b1"]
    assert (b1.title, b1.tags, b1.collection_ids, b1.user_tags) == (
        'Économie "quoted" – ünïcode',
        ("news", "tech"),
        ("c1", "c2"),
        ("À lire",),
    )
    assert b1.is_archived and b1.is_favorite and b1.save_why == "for the talk" and b1.notes == "line one\nline two"
    assert records["b2"].deleted_at is not None and records["b3"].description == "plain"
    assert [(c.collection_id, c.parent_id, c.deleted_at is None) for c in folders] == [
        ("c1", None, True),
        ("c2", "c1", True),
        ("c3", None, False),
    ]
    # Delta pages join the documents stored for each row: they must be what the wire code renders.
    assert _documents(page.bookmarks) == [wire.bookmark(records[i], is_pro=True) for i in ("b1", "b3")]
    assert _documents(page.bookmark_tombstones) == [wire.bookmark_tombstone(records["b2"])]
    assert _documents(page.collections) == [wire.collection(c) for c in folders[:2]]
    assert _documents(page.collection_tombstones) == [wire.collection_tombstone(folders[2])]
    assert page.count == 6 and not page.more and pro
    assert job is not None and (job["status"], job["processed"], job["created"], job["updated"]) == (
        "completed",
        2,
        1,
        0,
    )
    assert [(r["ordinal"], r["outcome"], r["reason"]) for r in report] == [
        (1, "created", None),
        (2, "invalid", "url_invalid"),
    ]
    assert chunk == b"<DL>" and early == {"title": "Early"}


def _documents(joined: bytes) -> list[Any]:
    return json.loads(b"[" + joined + b"]")


def _plain_bookmark(bookmark_id: str, **columns: str) -> str:
    return _bookmark(bookmark_id, "2026-11-20T11:00:00Z", **columns)


async def test_0002_gives_bookmarks_of_0001_the_library_fields(database: str) -> None:
    await upgrade_to(MIGRATIONS_DIR, database, "0001")
    await execute(database, _plain_bookmark("old"))
    await upgrade_to(MIGRATIONS_DIR, database, "head")
    rows, folders = await execute(
        database, "SELECT user_tags, is_archived FROM bookmarks", "SELECT count(*) FROM collections"
    )
    assert rows == [([], False)] and folders == [(0,)]


async def test_0005_gives_each_user_the_page_languages_of_their_bookmarks(database: str) -> None:
    german, plain = uuid.uuid4(), uuid.uuid4()
    await upgrade_to(MIGRATIONS_DIR, database, "0004")
    await execute(
        database,
        f"INSERT INTO user_streams (owner_uid, last_position) VALUES ('{german}', now()), ('{plain}', now())",
        _plain_bookmark("de", owner_uid=f"'{german}'", search_config="'german'"),
        _plain_bookmark("fr", owner_uid=f"'{german}'", search_config="'french'"),
        _plain_bookmark("plain", owner_uid=f"'{german}'", search_config="'simple'"),
        _plain_bookmark("plain", owner_uid=f"'{plain}'", search_config="'simple'"),
    )
    await upgrade_to(MIGRATIONS_DIR, database, "head")
    (rows,) = await execute(database, "SELECT owner_uid, search_configs FROM user_streams")
    assert {owner: sorted(configs) for owner, configs in rows} == {german: ["french", "german"], plain: []}


async def test_0006_renders_the_stored_document_of_every_bookmark_and_of_every_later_write(database: str) -> None:
    await upgrade_to(MIGRATIONS_DIR, database, "0005")
    await execute(database, _plain_bookmark("old", title="'Old \"quoted\" title'", tags="'{a,b}'"))
    await upgrade_to(MIGRATIONS_DIR, database, "head")
    before, nullable, _, after = await execute(
        database,
        "SELECT wire_document || '}' FROM bookmarks",
        "SELECT is_nullable FROM information_schema.columns "
        "WHERE table_name = 'bookmarks' AND column_name = 'wire_document'",
        "UPDATE bookmarks SET title = 'New', is_favorite = true",
        "SELECT wire_document || '}' FROM bookmarks",
    )
    document = json.loads(before[0][0])
    assert document["ownerUid"] == str(OWNER) and document["clientBookmarkId"] == "old"
    assert document["title"] == 'Old "quoted" title' and document["tags"] == ["a", "b"]
    assert "saveWhy" not in document and nullable == [("NO",)]
    assert json.loads(after[0][0]) == document | {"title": "New", "isFavorite": True}


async def test_make_migration_writes_the_revision_a_model_change_needs(infra: Any, tmp_path: Path) -> None:
    """``make migration`` on a model that gained a column: the revision it writes names only SQLAlchemy and
    Alembic, and the chain with it builds exactly the changed models."""
    chain = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, chain, ignore=shutil.ignore_patterns("__pycache__"))
    changed = schema()
    changed.metadata.tables["bookmarks"].append_column(Column("reading_minutes", Integer, nullable=True))
    # What a model field without its own column type gets from SQLModel.
    changed.metadata.tables["bookmarks"].append_column(Column("source", AutoString(), nullable=True))
    async with scratch_database(infra.postgres, "bookmarks_autogenerate") as url:
        path = await asyncio.to_thread(autogenerate, chain, url, "add bookmarks.reading_minutes", changed)
    assert path is not None and path.name == f"{next_revision_id(MIGRATIONS_DIR)}_add_bookmarks_reading_minutes.py"
    source = path.read_text(encoding="utf-8")
    assert 'op.add_column("bookmarks", sa.Column("reading_minutes", sa.Integer(), nullable=True))' in source
    assert 'op.add_column("bookmarks", sa.Column("source", sa.String(), nullable=True))' in source
    assert {line for line in source.splitlines() if line.startswith(("import", "from"))} == {
        "import sqlalchemy as sa",
        "from alembic import op",
    }
    async with scratch_database(infra.postgres, "bookmarks_autogenerated") as url:
        await upgrade_to(chain, url, "head")
        assert await schema_problems(url, changed) == []
        assert await schema_problems(url, schema()) != []


async def test_make_wire_document_migration_installs_the_current_document_and_re_renders_rows(
    infra: Any, tmp_path: Path
) -> None:
    """A chain whose latest stored-document SQL lacks a field (as after a wire model change): the revision
    ``make wire-document-migration`` writes renders old rows with it, and its downgrade without it."""
    chain = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, chain, ignore=shutil.ignore_patterns("__pycache__"))
    assert write_revision(chain) is None  # the real chain is current: nothing to write
    frozen = latest_function_sql(chain)
    lines = frozen.read_text(encoding="utf-8").splitlines(keepends=True)
    frozen.write_text("".join(line for line in lines if "',\"notes\":'" not in line), encoding="utf-8")
    path = write_revision(chain)
    assert path is not None and path.name == f"{next_revision_id(MIGRATIONS_DIR)}_wire_document.py"
    async with scratch_database(infra.postgres, "bookmarks_wire") as url:
        await upgrade_to(chain, url, head_and_previous(MIGRATIONS_DIR)[0])
        await execute(url, _plain_bookmark("b", notes="'kept'"))
        (before,) = await execute(url, "SELECT wire_document || '}' FROM bookmarks")
        await upgrade_to(chain, url, "head")
        (after,) = await execute(url, "SELECT wire_document || '}' FROM bookmarks")
        async with engine_on(url) as engine, AsyncSession(engine) as session:
            (record,) = await repository.all_for_owner(session, OWNER)
        await asyncio.to_thread(downgrade, alembic_config(migrations_dir=chain, url=url), "-1")
        (downgraded,) = await execute(url, "SELECT wire_document || '}' FROM bookmarks")
    assert "notes" not in json.loads(before[0][0]) and "notes" not in json.loads(downgraded[0][0])
    # The stored document is the wire document without the Pro-gated saveWhy (each page appends it).
    expected = {key: value for key, value in wire.bookmark(record, is_pro=True).items() if key != "saveWhy"}
    assert json.loads(after[0][0]) == expected and expected["notes"] == "kept"
