"""Highlight write rules (bookmarks.highlights.rules)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from bookmarks.highlights import rules
from bookmarks.highlights.anchoring import Anchor
from bookmarks.highlights.rules import Color, HighlightError, HighlightWrite

OWNER = uuid.uuid4()
T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(seconds=1)


def _new(**changes: object) -> rules.Highlight:
    write = HighlightWrite(bookmark_id="b1", quote="q", prefix="p", start=1, end=2, note="n")
    record = rules.write_highlight(None, write, owner=OWNER, highlight_id="h1", position=T0)
    assert record is not None
    return record


def test_create_defaults() -> None:
    record = _new()
    assert (record.color, record.suffix, record.anchor, record.created_at, record.updated_at) == (
        "yellow",
        "",
        None,
        T0,
        T0,
    )


def test_only_color_and_note_change_and_a_retry_changes_nothing() -> None:
    record = _new()
    same = HighlightWrite(bookmark_id="b1", quote="q")
    assert rules.write_highlight(record, same, owner=OWNER, highlight_id="h1", position=T1) is None
    changed = rules.write_highlight(
        record, HighlightWrite("b1", "q", color=Color.PINK), owner=OWNER, highlight_id="h1", position=T1
    )
    assert changed is not None and changed.color == "pink" and changed.note == "n" and changed.updated_at == T1
    for write in (HighlightWrite("b2", "q"), HighlightWrite("b1", "other"), HighlightWrite("b1", "q", prefix="x"),
                  HighlightWrite("b1", "q", suffix="x")):  # fmt: skip
        with pytest.raises(HighlightError):
            rules.write_highlight(record, write, owner=OWNER, highlight_id="h1", position=T1)


def test_a_deleted_one_is_written_anew_keeping_its_creation_time_and_bookmark() -> None:
    dead = rules.delete_highlight(_new(), OWNER, "h1", T1)
    assert dead is not None and dead.is_deleted
    back = rules.write_highlight(dead, HighlightWrite("b1", "q2"), owner=OWNER, highlight_id="h1", position=T1)
    assert back is not None and not back.is_deleted and back.quote == "q2" and back.created_at == T0
    with pytest.raises(HighlightError):
        rules.write_highlight(dead, HighlightWrite("b2", "q"), owner=OWNER, highlight_id="h1", position=T1)


def test_delete_is_idempotent_and_an_explicit_delete_is_not_undone_by_a_restore() -> None:
    assert rules.delete_highlight(None, OWNER, "h1", T1) is None
    dead = rules.delete_highlight(_new(), OWNER, "h1", T1)
    assert dead is not None and rules.delete_highlight(dead, OWNER, "h1", T1) is None
    with_bookmark = rules.deleted_with_bookmark(_new(), T1, T1)
    forgotten = rules.delete_highlight(with_bookmark, OWNER, "h1", T1 + T1.resolution)
    assert forgotten is not None and not forgotten.with_bookmark and forgotten.updated_at == T1


def test_limits() -> None:
    rules.check_counts(on_bookmark=rules.MAX_PER_BOOKMARK - 1, of_user=rules.MAX_PER_USER - 1)
    with pytest.raises(HighlightError, match="bookmark"):
        rules.check_counts(on_bookmark=rules.MAX_PER_BOOKMARK, of_user=0)
    with pytest.raises(HighlightError, match="100,000"):
        rules.check_counts(on_bookmark=0, of_user=rules.MAX_PER_USER)


def test_anchored_moves_only_what_changed() -> None:
    record = _new()
    placed = rules.anchored(record, Anchor("exact", 1, 2), T1)
    assert placed is not None and placed.anchor == "exact" and placed.updated_at == T1
    assert rules.anchored(placed, Anchor("exact", 1, 2), T1) is None
    lost = rules.anchored(placed, Anchor("orphan", None, None), T1)
    assert lost is not None and (lost.quote_start, lost.quote_end, lost.quote) == (None, None, "q")
