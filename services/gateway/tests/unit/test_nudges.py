"""Which events nudge a user's sockets: every change a delta reader would see, bookmarks and collections."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from aiokafka import ConsumerRecord

from common.events import BookmarkDeleted, BookmarkSaved, CollectionChanged, Event, UserUpdated
from gateway.events.consumers import nudge_handler

NOW = datetime(2026, 11, 23, tzinfo=UTC)


def _record(event: Event) -> ConsumerRecord[bytes, bytes]:
    value = event.model_dump_json().encode()
    return ConsumerRecord(
        topic=event.topic, partition=0, offset=0, timestamp=0, timestamp_type=0, key=event.key.encode(),
        value=value, checksum=None, serialized_key_size=0, serialized_value_size=len(value), headers=(),
    )


def test_bookmark_and_collection_changes_nudge_their_user_and_nothing_else_does() -> None:
    nudged: list[uuid.UUID] = []
    handle = nudge_handler(lambda user, _at: nudged.append(user))
    a, b, c, d = (uuid.uuid4() for _ in range(4))
    handle(_record(BookmarkSaved(userId=a, clientBookmarkId="x", url="https://e.com", normalizedUrl="https://e.com/",
                                 domain="e.com", updatedAt=NOW)))
    handle(_record(BookmarkDeleted(userId=b, clientBookmarkId="x", deletedAt=NOW)))
    handle(_record(CollectionChanged(userId=c, collectionId="c1", updatedAt=NOW)))
    handle(_record(UserUpdated(userId=d, isAnonymous=False, isPro=True, useAi=False)))
    assert nudged == [a, b, c]
