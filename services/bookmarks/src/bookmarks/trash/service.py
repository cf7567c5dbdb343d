"""Trash use cases (docs/api-guide.md, section 14): list, restore, purge, and the retention purge.

Restores are ordinary upserts at new stream positions: the stream row is locked first, as every write
does, then the bookmark rows. Purges lock only bookmark rows (skipping rows another transaction holds)
and leave positions alone: a purged tombstone looks the same to every device.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from bookmarks import service as bookmarks_service
from bookmarks.domain.errors import BookmarkNotFound, UserGone
from bookmarks.domain.model import Bookmark
from bookmarks.highlights import store as highlights_store
from bookmarks.metrics import TRASH_PURGED, TRASH_RESTORED
from bookmarks.service import BookmarkView
from bookmarks.store import lookups, repository
from bookmarks.trash import store
from bookmarks.trash.cursor import TrashPosition, decode_trash_cursor, encode_trash_cursor
from bookmarks.trash.rules import in_trash, purge_at, restored, retention_cutoff
from common.db import SessionFactory, transaction
from common.outbox import add_events

__all__ = [
    "MAX_RESTORED_PER_CALL",
    "TrashItem",
    "TrashPage",
    "empty_trash",
    "list_trash",
    "purge_expired",
    "purge_one",
    "restore_one",
    "restore_since",
]

MAX_RESTORED_PER_CALL: Final = 10_000
PURGE_BATCH: Final = 1000


@dataclass(frozen=True, slots=True)
class TrashItem:
    record: Bookmark
    purge_at: datetime
    merged_into: str | None


@dataclass(frozen=True, slots=True)
class TrashPage:
    items: list[TrashItem]
    next_cursor: str | None
    is_pro: bool


def _now() -> datetime:
    return datetime.now(UTC)


async def list_trash(
    *, sessions: SessionFactory, owner: uuid.UUID, limit: int, cursor: str | None, secret: str, retention: timedelta
) -> TrashPage:
    after = decode_trash_cursor(cursor, owner=owner, secret=secret) if cursor else None
    async with transaction(sessions) as session:  # one snapshot for the page and the plan
        records = await store.page(
            session, owner, cutoff=retention_cutoff(_now(), retention), after=after, limit=limit + 1
        )
        is_pro = await lookups.is_pro(session, owner)
    shown = records[:limit]
    next_cursor = None
    if len(records) > limit and (last := shown[-1][0]).deleted_at is not None:
        position = TrashPosition(last.deleted_at, last.client_bookmark_id)
        next_cursor = encode_trash_cursor(position, owner=owner, secret=secret)
    items = [TrashItem(r, purge_at(r, retention), into) for r, into in shown]
    return TrashPage(items, next_cursor, is_pro)


async def restore_one(
    *, sessions: SessionFactory, owner: uuid.UUID, client_bookmark_id: str, retention: timedelta
) -> BookmarkView:
    """The bookmark live again as it was when deleted; BookmarkNotFound when it is not in the trash."""
    async with transaction(sessions) as session:
        slot = await repository.open_stream(session, owner)
        if slot is None:
            raise UserGone()
        record = await repository.get_for_update(session, owner, client_bookmark_id)
        if record is None or not in_trash(record, now=_now(), retention=retention):
            raise BookmarkNotFound("This bookmark is not in the trash.")
        back = restored(record, slot.position)
        await repository.put_bookmark(session, back, event=bookmarks_service.revived_event(back))
        await highlights_store.follow_bookmarks(session, owner, [client_bookmark_id])
    TRASH_RESTORED.inc()
    return BookmarkView(back, slot.is_pro)


async def restore_since(*, sessions: SessionFactory, owner: uuid.UUID, since: datetime, retention: timedelta) -> int:
    """Restore the trashed bookmarks deleted at or after ``since`` (the oldest deletions first, at most
    MAX_RESTORED_PER_CALL); how many came back."""
    async with transaction(sessions) as session:
        if await repository.open_stream(session, owner) is None:  # the stream row first, as every write
            raise UserGone()
        found = await store.deleted_since(
            session, owner, since=since, cutoff=retention_cutoff(_now(), retention), limit=MAX_RESTORED_PER_CALL
        )
        if not found:
            return 0
        first, _ = await repository.allocate_positions(session, owner, len(found))
        back = [restored(r, first + i * repository.ONE_MICROSECOND) for i, r in enumerate(found)]
        await repository.update_bookmarks(session, back)
        await highlights_store.follow_bookmarks(session, owner, [r.client_bookmark_id for r in back])
        await add_events(session, [bookmarks_service.revived_event(r) for r in back])
    TRASH_RESTORED.inc(len(back))
    return len(back)


async def purge_one(*, sessions: SessionFactory, owner: uuid.UUID, client_bookmark_id: str) -> None:
    """Purge one trashed bookmark for good (idempotent: nothing to purge is fine)."""
    async with transaction(sessions) as session:
        records = await store.held(session, owner=owner, ids=[client_bookmark_id], cutoff=None, limit=1)
        await store.purge(session, records)
    TRASH_PURGED.labels("user").inc(len(records))


async def empty_trash(*, sessions: SessionFactory, owner: uuid.UUID) -> int:
    """Purge everything in the owner's trash, a batch per transaction (each batch is final on its own)."""
    return await _purge_batches(sessions, owner=owner, cutoff=None, reason="user")


async def purge_expired(*, sessions: SessionFactory, retention: timedelta) -> int:
    """Purge every user's trashed bookmarks deleted longer ago than ``retention``."""
    return await _purge_batches(sessions, owner=None, cutoff=retention_cutoff(_now(), retention), reason="expired")


async def _purge_batches(
    sessions: SessionFactory, *, owner: uuid.UUID | None, cutoff: datetime | None, reason: str
) -> int:
    total = 0
    while True:
        async with transaction(sessions) as session:
            records = await store.held(session, owner=owner, ids=None, cutoff=cutoff, limit=PURGE_BATCH)
            await store.purge(session, records)
        TRASH_PURGED.labels(reason).inc(len(records))
        total += len(records)
        if len(records) < PURGE_BATCH:
            return total
