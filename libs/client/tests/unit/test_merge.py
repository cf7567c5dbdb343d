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
        {"title": "nul\x00inside"},
        {"notes": "\x00"},
        {"description": "x" * 10_001},
        {"collectionIds": [f"c{i}" for i in range(1001)]},
        {"collectionIds": ["a\x00"]},
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


# -- the library model (docs/api-guide.md, section 11) ----------------------------------------------------


def test_client_fields_come_from_the_model_declaration() -> None:
    from bookmark_client.merge import CLIENT_FIELDS, COLLECTION_FIELDS, skeleton
    from bookmark_client.models import Bookmark

    assert {"userTags", "isArchived", "collectionIds", "url", "title"} <= set(CLIENT_FIELDS)
    assert not {"tags", "summary", "saveWhy", "enrichmentStatus", "updatedAt"} & set(CLIENT_FIELDS)
    assert COLLECTION_FIELDS == ("name", "parentId")
    # Every wire field of the model has a default in a fresh record, local bookkeeping aside.
    wire = {info.alias or name for name, info in Bookmark.model_fields.items()} - {"pending"}
    fresh = skeleton("a", owner="u", at="t")
    assert set(fresh) == wire
    assert fresh["userTags"] == [] and fresh["isArchived"] is False


def test_user_tags_are_trimmed_and_deduplicated_keeping_the_first_spelling() -> None:
    fields = normalize_fields({"user_tags": [" Python ", "python", "Rust", "PYTHON", "rust "], "is_archived": True})
    assert fields == {"userTags": ["Python", "Rust"], "isArchived": True}
    assert normalize_fields({"userTags": ["x" * 64] + [f"t{i}" for i in range(49)]})["userTags"][0] == "x" * 64
    # 60 spellings of 50 distinct tags are fine: the limit counts distinct tags.
    assert len(normalize_fields({"userTags": [f"t{i % 50}" for i in range(60)]})["userTags"]) == 50


@pytest.mark.parametrize(
    "tags",
    [
        [""],
        ["   "],
        ["x" * 65],
        ["bell\x07"],
        ["line\nbreak"],
        ["lone\ud800surrogate"],
        [1],
        "python",
        [f"t{i}" for i in range(51)],
    ],
)
def test_bad_user_tags_are_refused_not_dropped(tags: object) -> None:
    with pytest.raises(ValueError, match="userTags"):
        normalize_fields({"userTags": tags})


def test_is_archived_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match="isArchived"):
        normalize_fields({"isArchived": "yes"})


def test_collection_fields_are_validated() -> None:
    from bookmark_client.merge import normalize_collection_fields, validate_collection_id

    assert normalize_collection_fields({"name": "  Reading  ", "parent_id": None}) == {
        "name": "Reading",
        "parentId": None,
    }
    for bad in (
        {"name": "   "},
        {"name": "x" * 201},
        {"name": 3},
        {"name": "a\x00b"},
        {"name": " " * 995 + "short!"},
        {"parentId": "no/slash"},
        {"id": "x"},
    ):
        with pytest.raises(ValueError):
            normalize_collection_fields(bad)
    with pytest.raises(ValueError, match="collection id"):
        validate_collection_id("has space")


def test_collection_ops_replay_like_bookmark_ops() -> None:
    put = op(1, "collection-put", "c1", fields={"name": "Reading", "parentId": None})
    rename = op(3, "collection-put", "c1", fields={"name": "Later"})
    created = materialize(None, [put], owner="u")
    assert created is not None
    assert (created["id"], created["name"], created["parentId"], created["deleted"]) == ("c1", "Reading", None, False)

    server = {"id": "c1", "name": "Reading", "parentId": "p", "createdAt": "s", "updatedAt": "s2"}
    # A queued rename shows over a newer server copy; the server's parent stays (absent parentId keeps it).
    view = materialize(server, [rename], owner="u")
    assert view is not None and view["name"] == "Later" and view["parentId"] == "p"

    deleted = materialize(server, [op(4, "collection-delete", "c1")], owner="u")
    assert deleted is not None and deleted["deleted"] and deleted["deletedAt"] == "t4"
    revived = materialize({**server, "deleted": True, "deletedAt": "x"}, [rename], owner="u")
    assert revived is not None and not revived["deleted"] and revived["name"] == "Later"
    assert revived["parentId"] is None  # recreated at the top level: the server does not keep the old parent
    moved_back = op(5, "collection-put", "c1", fields={"name": "Later", "parentId": "p2"})
    revived = materialize({**server, "deleted": True, "deletedAt": "x"}, [moved_back], owner="u")
    assert revived is not None and revived["parentId"] == "p2"
    assert materialize(None, [op(1, "collection-delete", "nope")], owner=None) is None


def test_collection_tombstone_keeps_the_parent_for_display() -> None:
    from bookmark_client.merge import base_from_collection_tombstone

    previous = {"id": "c", "name": "N", "parentId": "p", "deleted": False, "deletedAt": None}
    base = base_from_collection_tombstone(previous, {"id": "c", "deletedAt": "d"})
    assert base["deleted"] and base["deletedAt"] == "d" and base["parentId"] == "p"
    unseen = base_from_collection_tombstone(None, {"id": "z", "deletedAt": "d"})
    assert unseen["id"] == "z" and unseen["deleted"]
