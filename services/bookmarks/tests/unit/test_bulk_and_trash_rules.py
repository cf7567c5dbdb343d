"""The pure rules of bulk changes, their undo, and the trash."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from bookmarks.bulk.rules import DELETED, BulkArgs, Change, apply, undo
from bookmarks.domain.model import Bookmark
from bookmarks.trash.rules import in_trash, purge_at, purged, restored

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
T1, T2, T3 = (T0 + timedelta(seconds=n) for n in (1, 2, 3))


def record(**fields: object) -> Bookmark:
    base = Bookmark(
        owner_uid=uuid.UUID(int=1),
        client_bookmark_id="b1",
        url="https://example.com/a",
        normalized_url="https://example.com/a",
        domain="example.com",
        created_at=T0,
        updated_at=T0,
    )
    return replace(base, **fields)  # type: ignore[arg-type]


def test_an_action_that_changes_nothing_is_no_change() -> None:
    assert apply(record(is_archived=True), BulkArgs("archive"), T1) is None
    assert apply(record(user_tags=("a",)), BulkArgs("removeTags", tags=("b",)), T1) is None


def test_tags_are_added_by_the_tag_rule_and_removed_case_insensitively() -> None:
    added = apply(record(user_tags=("Later",)), BulkArgs("addTags", tags=("later", " news ")), T1)
    assert added is not None and added[0].user_tags == ("Later", "news") and added[0].updated_at == T1
    removed = apply(record(user_tags=("Later", "news")), BulkArgs("removeTags", tags=("LATER",)), T1)
    assert removed is not None and removed[0].user_tags == ("news",)
    with pytest.raises(ValueError):
        apply(record(user_tags=tuple(f"t{n}" for n in range(50))), BulkArgs("addTags", tags=("x",)), T1)


def test_arguments_an_action_needs() -> None:
    for action in ("addTags", "removeTags"):
        with pytest.raises(ValueError):
            BulkArgs(action)  # type: ignore[arg-type]
    for action in ("addToCollection", "removeFromCollection"):
        with pytest.raises(ValueError):
            BulkArgs(action)  # type: ignore[arg-type]


def test_undo_puts_back_only_what_still_holds_the_bulks_value() -> None:
    changed, change = apply(record(), BulkArgs("favorite"), T1) or (None, None)
    assert changed is not None and change is not None
    assert Change.from_json(change.to_json()) == change
    undone = undo(replace(changed, title="renamed", updated_at=T2), change, T3)  # another field changed
    assert undone is not None and undone.is_favorite is False and undone.title == "renamed" and undone.updated_at == T3
    assert undo(replace(changed, is_favorite=False, updated_at=T2), change, T3) is None  # the same field changed
    assert undo(None, change, T3) is None


def test_a_delete_is_undone_only_from_that_delete() -> None:
    dead, change = apply(record(title="kept"), BulkArgs("delete"), T1) or (None, None)
    assert dead is not None and change is not None and change.field == DELETED and dead.deleted_at == T1
    back = undo(dead, change, T2)
    assert back is not None and back.deleted_at is None and back.title == "kept" and back.updated_at == T2
    assert undo(replace(dead, deleted_at=T2, updated_at=T2), change, T3) is None  # deleted again since
    assert undo(record(), change, T3) is None  # brought back by a write since
    assert undo(purged(dead), change, T3) is None  # purged from the trash


def test_the_trash_holds_deleted_state_within_the_retention() -> None:
    week = timedelta(days=7)
    dead = record(deleted_at=T0, updated_at=T0)
    assert in_trash(dead, now=T0 + timedelta(days=6), retention=week)
    assert not in_trash(dead, now=T0 + week, retention=week)
    assert not in_trash(record(), now=T0, retention=week)
    assert not in_trash(purged(dead), now=T0, retention=week)
    assert purge_at(dead, week) == T0 + week
    back = restored(dead, T1)
    assert back.deleted_at is None and back.updated_at == T1 and back.url == dead.url
    bare = purged(dead)
    assert (bare.url, bare.title, bare.user_tags, bare.deleted_at, bare.updated_at) == ("", None, (), T0, T0)


def test_a_merge_takes_the_union_and_the_first_text() -> None:
    from bookmarks.duplicates.rules import merged, sort_time

    keep = record(user_tags=("A",), notes="n1", title="  ", client_saved_at=T2, is_archived=True)
    one = record(client_bookmark_id="b2", user_tags=("a", "b"), notes=" n1 ", title="First", is_archived=True)
    two = record(client_bookmark_id="b3", notes="n2", title="Second", client_saved_at=T1, is_favorite=True)
    result = merged(keep, [one, two], T3)
    assert result.user_tags == ("A", "b") and result.title == "First" and result.notes == "n1\n\nn2"
    assert result.is_favorite and not result.is_archived and result.client_saved_at == T1 and result.updated_at == T3
    assert sort_time(one) == one.created_at and sort_time(two) == T1
    with pytest.raises(ValueError):
        merged(keep, [record(user_tags=tuple(f"t{n}" for n in range(50)))], T3)
