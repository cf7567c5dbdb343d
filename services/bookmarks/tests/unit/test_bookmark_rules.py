"""The bookmark rules of domain/model.py, without a database."""

from __future__ import annotations

import uuid
from dataclasses import FrozenInstanceError, replace
from datetime import UTC, datetime, timedelta

import pytest

from bookmarks.domain import model as rules
from bookmarks.domain.model import Bookmark, BookmarkWrite
from common.events import EnrichmentResult

OWNER, OTHER = uuid.uuid4(), uuid.uuid4()
T0 = datetime(2026, 11, 23, 12, tzinfo=UTC)
T1, T2 = T0 + timedelta(seconds=1), T0 + timedelta(seconds=2)


def write(**fields: object) -> BookmarkWrite:
    base: dict[str, object] = {"url": "https://e.com/a", "normalized_url": "https://e.com/a", "domain": "e.com"}
    return BookmarkWrite.of(base | fields)


def created(**fields: object) -> Bookmark:
    return rules.new_bookmark(OWNER, "b1", write(**fields), T0)


def enriched() -> Bookmark:
    result = EnrichmentResult(
        normalizedUrl="https://e.com/a",
        domain="e.com",
        title="Server title",
        summary="S",
        saveWhy="W",
        tags=["t"],
        snapshotStatus="ready",
    )
    return rules.apply_enrichment(created(title="Mine"), result, T1, T1)


def test_new_bookmark_has_the_defaults_and_the_written_fields() -> None:
    b = created(title="T", user_tags=["a"], is_archived=True)
    assert (b.created_at, b.updated_at, b.deleted_at) == (T0, T0, None)
    assert b.title == "T" and b.user_tags == ("a",) and b.is_archived is True
    assert b.tags == () and b.collection_ids == () and b.is_favorite is False
    assert b.enrichment_status == "pending" and b.snapshot_status == "pending"


def test_records_are_frozen() -> None:
    with pytest.raises(FrozenInstanceError):
        created().title = "x"  # type: ignore[misc]


def test_a_write_may_only_name_client_fields() -> None:
    with pytest.raises(ValueError, match="summary"):
        write(summary="mine")
    with pytest.raises(ValueError, match="owner_uid"):
        write(owner_uid=OTHER)


def test_write_normalizes_lists_and_null_flags() -> None:
    w = write(collection_ids=["c", "d", "c"], is_favorite=None, is_archived=None, user_tags=["x"])
    assert w.changes["collection_ids"] == ("c", "d")
    assert w.changes["is_favorite"] is False and w.changes["is_archived"] is False
    assert w.changes["user_tags"] == ("x",)


def test_merge_overwrites_present_fields_and_keeps_absent_ones() -> None:
    b = created(title="T", notes="N", user_tags=["a"], is_archived=True)
    merged = rules.merge_write(b, write(title="T2"), T1)
    assert merged is not None
    assert merged.title == "T2" and merged.notes == "N" and merged.user_tags == ("a",) and merged.is_archived
    assert merged.updated_at == T1 and merged.created_at == T0


def test_merge_can_clear_nullable_fields_and_user_state() -> None:
    b = created(title="T", user_tags=["a"], is_archived=True)
    merged = rules.merge_write(b, write(title=None, user_tags=[], is_archived=False), T1)
    assert merged is not None and merged.title is None and merged.user_tags == () and not merged.is_archived


def test_a_redundant_write_is_none() -> None:
    b = created(title="T", user_tags=["a", "b"], collection_ids=["c"])
    assert rules.merge_write(b, write(title="T"), T1) is None
    assert rules.merge_write(b, write(user_tags=["a", "b"], collection_ids=["c", "c"]), T1) is None
    assert rules.merge_write(b, write(user_tags=["b", "a"]), T1) is not None  # order is the user's


def test_a_write_revives_a_tombstone_even_when_identical() -> None:
    dead = rules.tombstone(created(title="T"), OWNER, "b1", T1)
    assert dead is not None
    revived = rules.merge_write(dead, write(title="T"), T2)
    assert revived is not None and revived.deleted_at is None and revived.updated_at == T2


def test_a_changed_url_resets_enrichment_but_keeps_sent_and_user_fields() -> None:
    b = replace(enriched(), user_tags=("mine",), is_archived=True, notes="N")
    moved = rules.merge_write(
        b, write(url="https://f.com/", normalized_url="https://f.com/", domain="f.com", title="New"), T2
    )
    assert moved is not None
    assert moved.summary is None and moved.save_why is None and moved.tags == ()
    assert moved.enrichment_status == "pending" and moved.enriched_at is None
    assert moved.title == "New" and moved.description is None
    assert moved.user_tags == ("mine",) and moved.is_archived and moved.notes == "N"
    assert rules.url_changed(b, write(url="https://f.com/", normalized_url="https://f.com/", domain="f.com"))


def test_the_same_normalized_url_keeps_enrichment() -> None:
    b = enriched()
    merged = rules.merge_write(b, write(url="https://E.com/a#x", is_favorite=True), T2)
    assert merged is not None and merged.summary == "S" and merged.tags == ("t",)


def test_tombstones() -> None:
    unknown = rules.tombstone(None, OWNER, "zz", T1)
    assert unknown is not None and unknown.is_deleted and unknown.updated_at == unknown.deleted_at == T1
    live = created()
    dead = rules.tombstone(live, OWNER, "b1", T1)
    assert dead is not None and dead.deleted_at == T1 and dead.updated_at == T1
    assert rules.tombstone(dead, OWNER, "b1", T2) is None  # idempotent: no new position


def test_enrichment_fills_server_fields_and_never_erases_user_text() -> None:
    b = created(
        title="Mine", description="My words", thumbnail_url="https://e.com/t.png", user_tags=["u"], is_archived=True
    )
    empty = EnrichmentResult(
        normalizedUrl="https://e.com/a",
        domain="e.com",
        title="",
        description=None,
        thumbnailUrl="",
        summary="S",
        tags=["x", "y"],
        snapshotStatus="ready",
    )
    out = rules.apply_enrichment(b, empty, T1, T2)
    assert (out.title, out.description, out.thumbnail_url) == ("Mine", "My words", "https://e.com/t.png")
    assert out.summary == "S" and out.tags == ("x", "y") and out.enrichment_status == "completed"
    assert out.enriched_at == T1 and out.updated_at == T2 and out.last_error_code is None
    assert out.user_tags == ("u",) and out.is_archived is True


def test_enrichment_overwrites_with_non_empty_values() -> None:
    b = created(title="Mine")
    full = EnrichmentResult(
        normalizedUrl="https://e.com/a",
        domain="e.com",
        title="Page",
        description="D",
        thumbnailUrl="https://e.com/i.png",
    )
    out = rules.apply_enrichment(b, full, T1, T1)
    assert (out.title, out.description, out.thumbnail_url) == ("Page", "D", "https://e.com/i.png")


@pytest.mark.parametrize(
    ("declared", "kept"),
    [
        ("https://www.e.com/a?utm_source=x", "https://e.com/a"),
        ("https://amp.e.com/a", "https://amp.e.com/a"),
        ("https://evil.example/a", None),  # another site: dropped, whoever produced the result
        ("javascript:alert(1)", None),
        (None, None),
    ],
)
def test_enrichment_keeps_a_same_site_canonical_url_only(declared: str | None, kept: str | None) -> None:
    b = replace(created(user_tags=["u"], notes="N"), canonical_url="https://e.com/old")
    result = EnrichmentResult(normalizedUrl="https://e.com/a", domain="e.com", canonicalUrl=declared)
    out = rules.apply_enrichment(b, result, T1, T1)
    assert out.canonical_url == kept
    assert out.user_tags == ("u",) and out.notes == "N" and out.url == b.url


def test_a_changed_url_clears_the_canonical_url() -> None:
    b = replace(enriched(), canonical_url="https://e.com/a")
    moved = rules.merge_write(b, write(url="https://f.com/", normalized_url="https://f.com/", domain="f.com"), T2)
    assert moved is not None and moved.canonical_url is None


def test_enrichment_applies_only_to_a_live_bookmark_of_that_page() -> None:
    b = created()
    assert rules.enrichment_applies(b, "https://e.com/a")
    assert not rules.enrichment_applies(b, "https://e.com/other")
    assert not rules.enrichment_applies(None, "https://e.com/a")
    dead = rules.tombstone(b, OWNER, "b1", T1)
    assert not rules.enrichment_applies(dead, "https://e.com/a")


def test_failures_are_recorded_but_never_undo_a_result() -> None:
    failed = rules.apply_enrichment_failure(created(), "failed", "upstream-4xx", T1)
    assert failed is not None and failed.enrichment_status == "failed" and failed.snapshot_status == "failed"
    assert failed.last_error_code == "upstream-4xx" and failed.updated_at == T1
    retrying = rules.apply_enrichment_failure(created(), "retrying", "timeout", T1)
    assert retrying is not None and retrying.snapshot_status == "pending"
    assert rules.apply_enrichment_failure(enriched(), "failed", "x", T2) is None


def test_collection_membership_rules() -> None:
    b = created(collection_ids=["a", "b"])
    assert rules.with_collections(b, ["a", "b", "a"], T1) is None
    replaced = rules.with_collections(b, ["c"], T1)
    assert replaced is not None and replaced.collection_ids == ("c",) and replaced.updated_at == T1
    stripped = rules.without_collection(b, "a", T1)
    assert stripped is not None and stripped.collection_ids == ("b",) and stripped.updated_at == T1
    assert rules.without_collection(b, "zzz", T1) is None


def test_account_merge_later_update_wins_and_moves_into_the_target_stream() -> None:
    mine = created()
    theirs = replace(created(), updated_at=T1)
    assert rules.incoming_wins(None, mine)
    assert rules.incoming_wins(mine, theirs) and not rules.incoming_wins(theirs, mine)
    assert not rules.incoming_wins(mine, mine)  # a tie keeps the target's
    moved = rules.moved_to(replace(theirs, user_tags=("k",), is_archived=True), OTHER, T2)
    assert moved.owner_uid == OTHER and moved.updated_at == T2 and moved.deleted_at is None
    assert moved.user_tags == ("k",) and moved.is_archived
    dead = rules.tombstone(mine, OWNER, "b1", T1)
    assert dead is not None and rules.moved_to(dead, OTHER, T2).deleted_at == T2
