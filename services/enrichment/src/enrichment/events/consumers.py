"""Handlers for the events the enrichment service consumes (run by common.consumer.ConsumerRunner).

Each runs inside the runner's transaction together with the processed-event insert, so a redelivered
event is skipped and a half-applied one cannot exist.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from common.consumer import BatchHandler, EventFilter, Handler
from common.events import (
    TOPIC_BOOKMARK_DELETED,
    TOPIC_BOOKMARK_SAVED,
    TOPIC_USER_DELETED,
    TOPIC_USER_MERGED,
    TOPIC_USER_UPDATED,
    BookmarkDeleted,
    BookmarkSaved,
    UserDeleted,
    UserMerged,
    UserUpdated,
)
from enrichment import service


async def on_bookmark_saved(session: AsyncSession, event: BookmarkSaved) -> None:
    await service.apply_bookmark_saved(session, event)


async def on_bookmarks_saved(session: AsyncSession, events: Sequence[BookmarkSaved]) -> None:
    await service.apply_bookmarks_saved(session, events)


async def on_bookmarks_deleted(session: AsyncSession, events: Sequence[BookmarkDeleted]) -> None:
    await service.apply_bookmarks_deleted(session, events)


async def on_bookmark_deleted(session: AsyncSession, event: BookmarkDeleted) -> None:
    await service.apply_bookmark_deleted(session, event)


async def on_user_updated(session: AsyncSession, event: UserUpdated) -> None:
    await service.apply_user_updated(session, event)


async def on_user_deleted(session: AsyncSession, event: UserDeleted) -> None:
    await service.purge_user(session, event.userId)


async def on_user_merged(session: AsyncSession, event: UserMerged) -> None:
    await service.merge_users(session, source=event.sourceUserId, target=event.userId)


HANDLERS: Mapping[str, Handler] = {
    TOPIC_BOOKMARK_SAVED: on_bookmark_saved,
    TOPIC_BOOKMARK_DELETED: on_bookmark_deleted,
    TOPIC_USER_UPDATED: on_user_updated,
    TOPIC_USER_DELETED: on_user_deleted,
    TOPIC_USER_MERGED: on_user_merged,
}

# Creates arrive in bursts (imports, a busy user): one statement pair per fetched batch, not per event.
BATCH_HANDLERS: Mapping[str, BatchHandler] = {
    TOPIC_BOOKMARK_SAVED: on_bookmarks_saved,
    TOPIC_BOOKMARK_DELETED: on_bookmarks_deleted,
}

# The projection (bookmark → normalized URL, deleted) only changes when a bookmark is created, gets another
# URL, is revived or deleted: the event says so, and every other save (title, notes, tags, enrichment
# results, which make up most writes) is skipped without a transaction.
EVENT_FILTERS: Mapping[str, EventFilter] = {
    TOPIC_BOOKMARK_SAVED: lambda event: isinstance(event, BookmarkSaved) and event.changes_url_or_liveness(),
}
