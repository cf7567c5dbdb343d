"""api/wire.py: the one domain → JSON path of upsert responses and delta pages."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime
from pathlib import Path

from pydantic.alias_generators import to_snake

from bookmarks.api import schemas, wire
from bookmarks.domain.collections import Collection
from bookmarks.domain.model import CLIENT_FIELDS, Bookmark

OWNER = uuid.uuid4()
T = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)


def bookmark(**fields: object) -> Bookmark:
    base = Bookmark(OWNER, "b1", "https://e.com/", "https://e.com/", "e.com", created_at=T, updated_at=T)
    return dataclasses.replace(base, **fields)  # type: ignore[arg-type]


def test_every_wire_field_comes_from_the_record_and_validates_against_the_declared_model() -> None:
    out = wire.bookmark(bookmark(user_tags=("a",), is_archived=True, save_why="W", tags=("t",)), is_pro=True)
    assert set(out) == set(schemas.Bookmark.model_fields)
    assert schemas.Bookmark.model_validate(out).model_dump() == out
    assert out["ownerUid"] == str(OWNER) and out["userTags"] == ["a"] and out["isArchived"] is True
    assert out["tags"] == ["t"] and out["saveWhy"] == "W"
    assert out["createdAt"] == "2026-11-23T12:00:00.000000Z" and out["enrichedAt"] is None


def test_save_why_is_pro_gated() -> None:
    assert wire.bookmark(bookmark(save_why="W"), is_pro=False)["saveWhy"] is None


def test_tombstones_and_collections() -> None:
    dead = bookmark(deleted_at=T)
    assert wire.bookmark_tombstone(dead) == {"clientBookmarkId": "b1", "deletedAt": "2026-11-23T12:00:00.000000Z"}
    c = Collection(OWNER, "c1", "Reading", created_at=T, updated_at=T, parent_id="p")
    out = wire.collection(c)
    assert out == {
        "id": "c1",
        "name": "Reading",
        "parentId": "p",
        "createdAt": "2026-11-23T12:00:00.000000Z",
        "updatedAt": "2026-11-23T12:00:00.000000Z",
    }
    assert set(out) == set(schemas.Collection.model_fields)
    assert wire.collection_tombstone(dataclasses.replace(c, deleted_at=T)) == {
        "id": "c1",
        "deletedAt": "2026-11-23T12:00:00.000000Z",
    }


def test_the_upsert_body_writes_exactly_the_client_fields_of_the_record() -> None:
    sent = {to_snake(name) for name in schemas.BookmarkUpsert.model_fields}
    assert sent | {"normalized_url", "domain"} == CLIENT_FIELDS
    stored = {f.name for f in dataclasses.fields(Bookmark)}
    shown = {to_snake(name) for name in schemas.Bookmark.model_fields}
    assert shown == stored - {"deleted_at"}  # every stored field is on the wire, the tombstone mark aside


MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations" / "versions"


def test_the_stored_document_trigger_is_the_wire_plan_as_frozen_in_the_latest_migration() -> None:
    """Delta pages join documents a trigger rendered at write time (api/wire.py): when the Bookmark wire
    model changes, the trigger must be installed again by a new migration, or pages would serve the old
    shape. This says so."""
    latest = sorted(MIGRATIONS.glob("*_wire_document.sql"))[-1]
    assert latest.read_text(encoding="utf-8") == wire.document_function_sql() + "\n", (
        f"the Bookmark wire model no longer matches {latest.name}: run `make wire-document-migration` "
        "(after the revision adding the field's column) to write the revision that installs it"
    )


def test_the_stored_document_holds_every_wire_field_but_the_pro_gated_one() -> None:
    function = wire.document_function_sql()
    keys = {name for name in schemas.Bookmark.model_fields if f'"{name}":' in function}
    assert keys == set(schemas.Bookmark.model_fields) - {"saveWhy"}
