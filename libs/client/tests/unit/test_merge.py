"""Pure merge rules: field validation and how queued operations apply."""

from __future__ import annotations

from datetime import datetime

import pytest

from bookmark_client.merge import apply_op, materialize, normalize_fields, validate_bookmark_id
from bookmark_client.models import QueuedOp


def op(seq: int, kind: str, bookmark_id: str = "a", **payload: object) -> QueuedOp:
    return QueuedOp(seq=seq, kind=kind, bookmark_id=bookmark_id, payload=dict(payload), created_at=f"t{seq}")  # type: ignore[arg-type]


def test_normalize_accepts_wire_and_snake_names() -> None:
    fields = normalize_fields(
        {
            "url": "https://example.com/x",
            "is_favorite": True,
            "collectionIds": ("c1",),
            "client_saved_at": datetime(2030, 1, 2, 3, 4, 5),
            "title": None,
        }
    )
    assert fields == {
        "url": "https://example.com/x",
        "isFavorite": True,
        "collectionIds": ["c1"],
        "clientSavedAt": "2030-01-02T03:04:05+00:00",
        "title": None,
    }


@pytest.mark.parametrize(
    "fields",
    [
        {"url": "ftp://example.com/"},
        {"url": "https://"},
        {"url": "https://e.com/" + "x" * 2048},
        {"title": "x" * 1001},
        {"notes": "x" * 10_001},
        {"isFavorite": "yes"},
        {"clientSavedAt": "yesterday"},
        {"collectionIds": "c1"},
        {"summary": "server-only field"},
        {"tags": ["x"]},
    ],
)
def test_normalize_refuses_what_the_server_would(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        normalize_fields(fields)


@pytest.mark.parametrize("bad", ["", "with space", "x" * 129, "slash/id", "ünï"])
def test_bookmark_id_pattern(bad: str) -> None:
    with pytest.raises(ValueError):
        validate_bookmark_id(bad)
    assert validate_bookmark_id("Ab-9_z") == "Ab-9_z"


def test_put_revives_a_deleted_record_and_keeps_unsent_fields() -> None:
    deleted = {
        "clientBookmarkId": "a",
        "url": "https://e.com/",
        "title": "old",
        "notes": "n",
        "deleted": True,
        "deletedAt": "t0",
    }
    revived = apply_op(deleted, op(1, "put", fields={"url": "https://e.com/", "title": "new"}), owner="u")
    assert revived is not None
    assert revived["deleted"] is False and revived["deletedAt"] is None
    assert revived["title"] == "new" and revived["notes"] == "n"


def test_materialize_replays_in_sequence_order() -> None:
    ops = [
        op(3, "put", fields={"url": "https://e.com/", "title": "third"}),
        op(1, "put", fields={"url": "https://e.com/", "title": "first"}),
        op(2, "delete"),
    ]
    record = materialize(None, ops, owner="u")
    assert record is not None
    assert record["title"] == "third" and not record["deleted"]
    assert record["ownerUid"] == "u" and record["enrichmentStatus"] == "pending" and record["tags"] == []


def test_delete_or_collections_of_unknown_bookmark_shows_nothing() -> None:
    assert materialize(None, [op(1, "delete")], owner=None) is None
    assert materialize(None, [op(1, "collections", collectionIds=["c"])], owner=None) is None
