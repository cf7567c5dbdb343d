"""Issue 15: enrichment's projection consumer skips the saves that cannot change it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from common.events import TOPIC_BOOKMARK_SAVED, BookmarkSaved
from enrichment.events.consumers import EVENT_FILTERS, HANDLERS


def _save(**flags: bool) -> BookmarkSaved:
    return BookmarkSaved(
        userId=uuid.uuid4(),
        clientBookmarkId="b",
        url="https://e.com",
        normalizedUrl="https://e.com/",
        domain="e.com",
        updatedAt=datetime.now(UTC),
        **flags,
    )


def test_title_only_saves_are_skipped_and_url_changes_creations_revivals_kept() -> None:
    wanted = EVENT_FILTERS[TOPIC_BOOKMARK_SAVED]
    assert not wanted(_save(revived=False))
    assert wanted(_save(created=True, revived=False))
    assert wanted(_save(urlChanged=True, revived=False))
    assert wanted(_save(revived=True))
    assert wanted(_save())  # an older producer that does not say


def test_only_consumed_topics_are_filtered() -> None:
    assert set(EVENT_FILTERS) <= set(HANDLERS)
