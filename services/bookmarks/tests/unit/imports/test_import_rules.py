"""The pure rules of the import job (docs/api-guide.md, section 13): create, merge, unchanged, invalid."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from bookmarks.domain.model import Bookmark
from bookmarks.imports.formats.model import ImportItem, validate_item
from bookmarks.imports.rules import apply_item, merged_tags, path_lookup

OWNER = uuid.uuid4()
T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = datetime(2026, 1, 2, tzinfo=UTC)


def item(url: str = "https://example.com/a", **fields: object) -> ImportItem:
    return validate_item(ImportItem(line=2, url=url, **fields))  # type: ignore[arg-type]


def stored(**fields: object) -> Bookmark:
    base = {
        "owner_uid": OWNER,
        "client_bookmark_id": "b1",
        "url": "https://example.com/a",
        "normalized_url": "https://example.com/a",
        "domain": "example.com",
        "created_at": T0,
        "updated_at": T0,
    }
    return Bookmark(**{**base, **fields})  # type: ignore[arg-type]


def test_a_new_url_creates_a_bookmark_with_what_the_file_says() -> None:
    new = item(title="A", user_tags=("x",), is_archived=True, saved_at=T0)
    applied = apply_item(None, new, owner=OWNER, collection_ids=("c1",), new_id="n1", position=T1)
    assert applied.outcome == "created" and applied.record is not None
    record = applied.record
    assert (record.client_bookmark_id, record.title, record.user_tags, record.collection_ids) == (
        "n1",
        "A",
        ("x",),
        ("c1",),
    )
    assert record.is_archived and not record.is_favorite and record.client_saved_at == T0
    assert record.normalized_url == "https://example.com/a" and record.created_at == T1


def test_merging_adds_tags_and_collections_sets_flags_and_fills_only_empty_text() -> None:
    existing = stored(title="Mine", user_tags=("Keep",), collection_ids=("c0",), is_archived=True)
    new = item(title="Theirs", description="About", user_tags=("keep", "new"), is_favorite=True, is_archived=False)
    applied = apply_item(existing, new, owner=OWNER, collection_ids=("c1",), new_id="n1", position=T1)
    assert applied.outcome == "updated" and applied.record is not None
    record = applied.record
    assert record.client_bookmark_id == "b1" and record.updated_at == T1
    assert record.title == "Mine" and record.description == "About"
    assert record.user_tags == ("Keep", "new") and record.collection_ids == ("c0", "c1")
    assert record.is_favorite and not record.is_archived


def test_an_item_that_adds_nothing_is_unchanged() -> None:
    existing = stored(title="Mine", user_tags=("a",), collection_ids=("c1",), is_favorite=True)
    new = item(title="Other", user_tags=("A",), is_favorite=True)
    applied = apply_item(existing, new, owner=OWNER, collection_ids=("c1",), new_id="n1", position=T1)
    assert applied.outcome == "unchanged" and applied.record == existing


def test_an_item_without_flags_leaves_them_alone() -> None:
    existing = stored(is_favorite=True, is_archived=True)
    applied = apply_item(existing, item(), owner=OWNER, collection_ids=(), new_id="n1", position=T1)
    assert applied.outcome == "unchanged"


def test_an_invalid_item_writes_nothing() -> None:
    applied = apply_item(None, item("javascript:alert(1)"), owner=OWNER, collection_ids=(), new_id="n", position=T1)
    assert applied.outcome == "invalid" and applied.record is None


def test_tags_merge_case_insensitively_and_stop_at_fifty() -> None:
    assert merged_tags(("A",), ("a", "b", "B", "c")) == ("A", "b", "c")
    assert len(merged_tags(tuple(f"t{i}" for i in range(49)), ("x", "y", "z"))) == 50


def test_collection_paths_are_matched_level_by_level() -> None:
    live = {(None, "Toolbar"): "t", ("t", "Reading"): "r"}
    assert path_lookup(live, ("Toolbar", "Reading")) == ("r", 2)
    assert path_lookup(live, ("Toolbar", "Other", "Deep")) == ("t", 1)
    assert path_lookup(live, ("Reading",)) == (None, 0)
