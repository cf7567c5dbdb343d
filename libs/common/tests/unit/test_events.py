"""Event contracts: every topic has a model; parsing round-trips and ignores unknown fields."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from common.events import (
    TOPICS,
    BookmarkDeleted,
    BookmarkSaved,
    CollectionChanged,
    EnrichmentCompleted,
    EnrichmentFailed,
    EnrichmentResult,
    HighlightChanged,
    LinkChecked,
    UserDeleted,
    UserMerged,
    UserUpdated,
    parse_event,
)

NOW = datetime(2026, 11, 22, tzinfo=UTC)
U = uuid.uuid4()
SAMPLES = [
    BookmarkSaved(
        userId=U,
        clientBookmarkId="b",
        url="https://e.com",
        normalizedUrl="https://e.com/",
        domain="e.com",
        updatedAt=NOW,
    ),
    BookmarkDeleted(userId=U, clientBookmarkId="b", deletedAt=NOW),
    EnrichmentCompleted(
        userId=U,
        clientBookmarkId="b",
        normalizedUrl="https://e.com/",
        result=EnrichmentResult(normalizedUrl="https://e.com/", domain="e.com"),
    ),
    EnrichmentFailed(
        userId=U, clientBookmarkId="b", normalizedUrl="https://e.com/", status="failed", errorCode="upstream-4xx"
    ),
    UserUpdated(userId=U, isAnonymous=True, isPro=False, useAi=False),
    UserDeleted(userId=U),
    UserMerged(userId=U, sourceUserId=uuid.uuid4()),
    CollectionChanged(userId=U, collectionId="c", deleted=True, updatedAt=NOW),
    HighlightChanged(userId=U, highlightId="h", deleted=False, updatedAt=NOW),
    LinkChecked(
        userId=U,
        clientBookmarkId="b",
        normalizedUrl="https://example.com/",
        linkStatus="moved",
        checkedAt=NOW,
        movedTo="https://example.org/",
    ),
]


def test_every_topic_has_a_contract() -> None:
    assert {s.type for s in SAMPLES} == set(TOPICS)


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.type)
def test_round_trip_and_key(event: BookmarkSaved) -> None:
    parsed = parse_event(event.model_dump_json())
    assert parsed == event and parsed.key == str(U) and parsed.topic == event.type and parsed.version == 1


def test_unknown_fields_are_ignored_and_bad_payloads_rejected() -> None:
    raw = json.loads(SAMPLES[5].model_dump_json()) | {"addedLater": 1}
    assert parse_event(json.dumps(raw)) == SAMPLES[5]
    with pytest.raises(ValidationError):
        parse_event(b'{"type": "user.deleted"}')
    with pytest.raises(ValidationError):
        parse_event(b'{"type": "nope", "userId": "x"}')
    with pytest.raises(ValidationError):
        parse_event(b"not json")


def _save(**flags: bool) -> BookmarkSaved:
    return BookmarkSaved(
        userId=U,
        clientBookmarkId="b",
        url="https://e.com",
        normalizedUrl="https://e.com/",
        domain="e.com",
        updatedAt=NOW,
        **flags,
    )


def test_a_saved_event_tells_whether_the_url_or_liveness_may_have_changed() -> None:
    assert _save(created=True, revived=False).changes_url_or_liveness()
    assert _save(urlChanged=True, revived=False).changes_url_or_liveness()
    assert _save(revived=True).changes_url_or_liveness()
    assert not _save(revived=False).changes_url_or_liveness()  # a title, tag or enrichment change


def test_a_saved_event_from_an_older_producer_counts_as_changing_the_url() -> None:
    payload = json.loads(_save(revived=False).model_dump_json())
    del payload["revived"]
    event = parse_event(json.dumps(payload).encode())
    assert isinstance(event, BookmarkSaved) and event.revived is None
    assert event.changes_url_or_liveness()  # unknown: applied, never skipped
