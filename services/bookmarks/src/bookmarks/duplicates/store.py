"""Reads and writes of duplicates: groups of a user's live bookmarks with one key (``DUPLICATE_KEY``, the
canonical URL else the normalized URL, read through ``ix_bookmarks_live_duplicate_key``), and the record
of each merge."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, func, select, tuple_
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.model import Bookmark
from bookmarks.store.tables import BOOKMARK_COLUMNS, DUPLICATE_KEY, bookmarks, merges

_c = bookmarks.c


@dataclass(frozen=True, slots=True)
class GroupKey:
    key: str
    """The duplicates key the group shares."""
    newest: datetime
    """Its newest member's save time (``clientSavedAt``, else ``createdAt``): groups are ordered by it."""


async def group_keys(session: AsyncSession, owner: uuid.UUID, *, after: GroupKey | None, limit: int) -> list[GroupKey]:
    """Up to ``limit`` groups after ``after``, newest member first."""
    statement = group_keys_statement(owner, after=after, limit=limit)
    return [GroupKey(row.key, row.newest) for row in await session.execute(statement)]


def group_keys_statement(owner: uuid.UUID, *, after: GroupKey | None, limit: int) -> Select[Any]:
    saved = func.coalesce(_c.client_saved_at, _c.created_at)
    groups = (
        select(DUPLICATE_KEY.label("key"), func.max(saved).label("newest"))
        .where(_c.owner_uid == owner, _c.deleted_at.is_(None))
        .group_by(DUPLICATE_KEY)
        .having(func.count() > 1)
        .subquery()
    )
    statement = select(groups.c.key, groups.c.newest)
    if after is not None:
        statement = statement.where(tuple_(groups.c.newest, groups.c.key) < tuple_(after.newest, after.key))
    return statement.order_by(groups.c.newest.desc(), groups.c.key.desc()).limit(limit)


@dataclass(frozen=True, slots=True)
class Keyed:
    record: Bookmark
    key: str
    """Its duplicates key."""


async def members(session: AsyncSession, owner: uuid.UUID, keys: Sequence[str]) -> list[Keyed]:
    """The live bookmarks of ``keys``, in no order: sorting a page's few members here keeps the planner
    on the key index, where an ORDER BY could lead it to walk the owner's whole library newest first."""
    rows = (await session.execute(members_statement(owner, keys))).mappings()
    return [Keyed(Bookmark.from_row(row), row["duplicate_key"]) for row in rows]


def members_statement(owner: uuid.UUID, keys: Sequence[str]) -> Select[Any]:
    return select(*BOOKMARK_COLUMNS, DUPLICATE_KEY.label("duplicate_key")).where(
        _c.owner_uid == owner, _c.deleted_at.is_(None), DUPLICATE_KEY.in_(list(keys))
    )


async def live_for_update(session: AsyncSession, owner: uuid.UUID, ids: Sequence[str]) -> dict[str, Keyed]:
    """The live bookmarks of ``ids`` with their duplicates keys, locked."""
    statement = (
        select(*BOOKMARK_COLUMNS, DUPLICATE_KEY.label("duplicate_key"))
        .where(_c.owner_uid == owner, _c.client_bookmark_id.in_(list(ids)), _c.deleted_at.is_(None))
        .order_by(_c.client_bookmark_id)
        .with_for_update()
    )
    found = [
        Keyed(Bookmark.from_row(row), row["duplicate_key"]) for row in (await session.execute(statement)).mappings()
    ]
    return {keyed.record.client_bookmark_id: keyed for keyed in found}


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
