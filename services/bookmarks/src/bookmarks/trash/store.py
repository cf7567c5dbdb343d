"""Reads and writes of the trash: deleted rows that still hold their state (``ix_bookmarks_trash``,
``ix_bookmarks_trash_expiry``)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import ColumnElement, and_, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.model import Bookmark
from bookmarks.highlights import store as highlights_store
from bookmarks.store.repository import update_bookmarks
from bookmarks.store.tables import BOOKMARK_COLUMNS, bookmarks, merges
from bookmarks.trash.cursor import TrashPosition
from bookmarks.trash.rules import purged

_c = bookmarks.c


def _holding_state() -> ColumnElement[bool]:
    return and_(_c.deleted_at.is_not(None), _c.url != "")


async def page(
    session: AsyncSession, owner: uuid.UUID, *, cutoff: datetime, after: TrashPosition | None, limit: int
) -> list[tuple[Bookmark, str | None]]:
    """The owner's trash, most recently deleted first, after ``after``: each record with the bookmark a
    duplicates merge kept instead of it (None for an ordinary delete)."""
    same_delete = and_(
        merges.c.owner_uid == _c.owner_uid,
        merges.c.client_bookmark_id == _c.client_bookmark_id,
        merges.c.deleted_at == _c.deleted_at,
    )
    statement = (
        select(*BOOKMARK_COLUMNS, merges.c.merged_into)
        .select_from(bookmarks.outerjoin(merges, same_delete))
        .where(_c.owner_uid == owner, _holding_state(), _c.deleted_at > cutoff)
    )
    if after is not None:
        statement = statement.where(
            tuple_(_c.deleted_at, _c.client_bookmark_id) < tuple_(after.deleted_at, after.client_bookmark_id)
        )
    statement = statement.order_by(_c.deleted_at.desc(), _c.client_bookmark_id.desc()).limit(limit)
    rows = (await session.execute(statement)).mappings()
    return [
        (Bookmark.from_row({k: v for k, v in row.items() if k != "merged_into"}), row["merged_into"]) for row in rows
    ]


async def deleted_since(
    session: AsyncSession, owner: uuid.UUID, *, since: datetime, cutoff: datetime, limit: int
) -> list[Bookmark]:
    """The owner's trashed bookmarks deleted at or after ``since``, oldest deletion first, locked."""
    statement = (
        select(*BOOKMARK_COLUMNS)
        .where(_c.owner_uid == owner, _holding_state(), _c.deleted_at > cutoff, _c.deleted_at >= since)
        .order_by(_c.deleted_at, _c.client_bookmark_id)
        .limit(limit)
        .with_for_update()
    )
    return [Bookmark.from_row(row) for row in (await session.execute(statement)).mappings()]


async def held(
    session: AsyncSession, *, owner: uuid.UUID | None, ids: Sequence[str] | None, cutoff: datetime | None, limit: int
) -> list[Bookmark]:
    """Deleted rows still holding state, locked (rows another transaction holds are skipped): of one owner
    (``ids`` of them, or all), or of everyone deleted at or before ``cutoff``; oldest deletion first."""
    conditions = [_holding_state()]
    if owner is not None:
        conditions.append(_c.owner_uid == owner)
    if ids is not None:
        conditions.append(_c.client_bookmark_id.in_(list(ids)))
    if cutoff is not None:
        conditions.append(_c.deleted_at <= cutoff)
    statement = (
        select(*BOOKMARK_COLUMNS)
        .where(*conditions)
        .order_by(_c.deleted_at, _c.owner_uid, _c.client_bookmark_id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return [Bookmark.from_row(row) for row in (await session.execute(statement)).mappings()]


async def purge(session: AsyncSession, records: Sequence[Bookmark]) -> None:
    """Keep only the tombstones of ``records`` (their search columns are emptied with the state), and of
    their highlights; forget their readable text."""
    await update_bookmarks(session, [purged(record) for record in records])
    by_owner: dict[uuid.UUID, list[str]] = {}
    for record in records:
        by_owner.setdefault(record.owner_uid, []).append(record.client_bookmark_id)
    for owner, ids in by_owner.items():
        await highlights_store.forget(session, owner, ids)


__all__ = ["deleted_since", "held", "page", "purge"]
