"""Which events nudge a user's sockets: every change a delta reader would see, bookmarks and collections."""

from __future__ import annotations

import dataclasses
import logging
import uuid
from datetime import UTC, datetime

import pytest
from aiokafka import ConsumerRecord

from common.events import BookmarkDeleted, BookmarkSaved, CollectionChanged, Event, UserUpdated
from gateway.events.consumers import nudge_handler

NOW = datetime(2026, 11, 23, tzinfo=UTC)


def _record(event: Event) -> ConsumerRecord[bytes, bytes]:
    value = event.model_dump_json().encode()
    return ConsumerRecord(
        topic=event.topic,
        partition=0,
        offset=0,
        timestamp=0,
        timestamp_type=0,
        key=event.key.encode(),
        value=value,
        checksum=None,
        serialized_key_size=0,
        serialized_value_size=len(value),
        headers=(),
    )


def test_bookmark_and_collection_changes_nudge_their_user_and_nothing_else_does() -> None:
    nudged: list[uuid.UUID] = []
    handle = nudge_handler(lambda user, _at: nudged.append(user))
    a, b, c, d = (uuid.uuid4() for _ in range(4))
    handle(
        _record(
            BookmarkSaved(
                userId=a,
                clientBookmarkId="x",
                url="https://e.com",
                normalizedUrl="https://e.com/",
                domain="e.com",
                updatedAt=NOW,
            )
        )
    )
    handle(_record(BookmarkDeleted(userId=b, clientBookmarkId="x", deletedAt=NOW)))
    handle(_record(CollectionChanged(userId=c, collectionId="c1", updatedAt=NOW)))
    handle(_record(UserUpdated(userId=d, isAnonymous=False, isPro=True, useAi=False)))
    assert nudged == [a, b, c]


def test_every_nudging_event_is_keyed_by_its_user() -> None:
    """The tail skips records of users without a socket by their key alone: that is sound only while the
    key of every event that nudges is its user's id."""
    user = uuid.uuid4()
    for event in (
        BookmarkSaved(
            userId=user,
            clientBookmarkId="x",
            url="https://e.com",
            normalizedUrl="https://e.com/",
            domain="e.com",
            updatedAt=NOW,
        ),
        BookmarkDeleted(userId=user, clientBookmarkId="x", deletedAt=NOW),
        CollectionChanged(userId=user, collectionId="c1", updatedAt=NOW),
    ):
        assert _record(event).key == str(user).encode()


def test_a_user_without_a_socket_here_is_skipped_without_parsing_the_event(caplog: pytest.LogCaptureFixture) -> None:
    nudged: list[uuid.UUID] = []
    listening = uuid.uuid4()
    handle = nudge_handler(lambda user, _at: nudged.append(user), listening=lambda user: user == listening)
    elsewhere = _record(BookmarkDeleted(userId=uuid.uuid4(), clientBookmarkId="x", deletedAt=NOW))
    assert handle(elsewhere) == "skipped"
    with caplog.at_level(logging.WARNING):  # parsed, it would be logged as unparseable: the key decides first
        assert handle(dataclasses.replace(elsewhere, value=b"not json")) == "skipped"
    assert not caplog.records
    assert handle(_record(BookmarkDeleted(userId=listening, clientBookmarkId="x", deletedAt=NOW))) == "applied"
    assert nudged == [listening]


def test_a_record_whose_key_is_not_a_user_id_is_parsed_and_nudges_its_user() -> None:
    nudged: list[uuid.UUID] = []
    user = uuid.uuid4()
    handle = nudge_handler(lambda u, _at: nudged.append(u), listening=lambda _: False)
    for key in (b"not-a-uuid", b"\xff\xfe", None):
        record = _record(BookmarkDeleted(userId=user, clientBookmarkId="x", deletedAt=NOW))
        assert handle(dataclasses.replace(record, key=key)) == "applied"
    assert nudged == [user, user, user]
