"""Reads and writes of duplicates: groups of a user's live bookmarks with one normalized URL
(``ix_bookmarks_live_url``), and the record of each merge."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, tuple_
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.model import Bookmark
from bookmarks.store.tables import BOOKMARK_COLUMNS, bookmarks, merges

_c = bookmarks.c


@dataclass(frozen=True, slots=True)
class GroupKey:
    key: str
    """The normalized URL the group shares."""
    newest: datetime
    """Its newest member's save time (``clientSavedAt``, else ``createdAt``): groups are ordered by it."""


async def group_keys(session: AsyncSession, owner: uuid.UUID, *, after: GroupKey | None, limit: int) -> list[GroupKey]:
    """Up to ``limit`` groups after ``after``, newest member first."""
    saved = func.coalesce(_c.client_saved_at, _c.created_at)
    groups = (
        select(_c.normalized_url.label("key"), func.max(saved).label("newest"))
        .where(_c.owner_uid == owner, _c.deleted_at.is_(None))
        .group_by(_c.normalized_url)
        .having(func.count() > 1)
        .subquery()
    )
    statement = select(groups.c.key, groups.c.newest)
    if after is not None:
        statement = statement.where(tuple_(groups.c.newest, groups.c.key) < tuple_(after.newest, after.key))
    statement = statement.order_by(groups.c.newest.desc(), groups.c.key.desc()).limit(limit)
    return [GroupKey(row.key, row.newest) for row in await session.execute(statement)]


async def members(session: AsyncSession, owner: uuid.UUID, keys: Sequence[str]) -> list[Bookmark]:
    """The live bookmarks of ``keys``, oldest save first within a key."""
    saved = func.coalesce(_c.client_saved_at, _c.created_at)
    statement = (
        select(*BOOKMARK_COLUMNS)
        .where(_c.owner_uid == owner, _c.deleted_at.is_(None), _c.normalized_url.in_(list(keys)))
        .order_by(saved, _c.client_bookmark_id)
    )
    return [Bookmark.from_row(row) for row in (await session.execute(statement)).mappings()]


async def live_for_update(session: AsyncSession, owner: uuid.UUID, ids: Sequence[str]) -> dict[str, Bookmark]:
    statement = (
        select(*BOOKMARK_COLUMNS)
        .where(_c.owner_uid == owner, _c.client_bookmark_id.in_(list(ids)), _c.deleted_at.is_(None))
        .order_by(_c.client_bookmark_id)
        .with_for_update()
    )
    found = [Bookmark.from_row(row) for row in (await session.execute(statement)).mappings()]
    return {record.client_bookmark_id: record for record in found}


async def record_merges(session: AsyncSession, owner: uuid.UUID, into: str, deleted: Sequence[Bookmark]) -> None:
    rows = [
        {
            "owner_uid": owner,
            "client_bookmark_id": r.client_bookmark_id,
            "merged_into": into,
            "deleted_at": r.deleted_at,
        }
        for r in deleted
    ]
    statement = insert(merges).values(rows)
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[merges.c.owner_uid, merges.c.client_bookmark_id],
            set_={"merged_into": statement.excluded.merged_into, "deleted_at": statement.excluded.deleted_at},
        )
    )
