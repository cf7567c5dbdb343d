"""Reads and writes of bulk changes: the bookmarks they act on, and the undo records."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.model import Bookmark
from bookmarks.search.queries import COLUMNS, context
from bookmarks.search.query import Query
from bookmarks.search.sql import every_match
from bookmarks.store.tables import BOOKMARK_COLUMNS, bookmarks, bulk_operations

_c = bookmarks.c
_ops = bulk_operations.c


async def live_by_ids(session: AsyncSession, owner: uuid.UUID, ids: Sequence[str]) -> list[Bookmark]:
    statement = (
        select(*BOOKMARK_COLUMNS)
        .where(_c.owner_uid == owner, _c.client_bookmark_id.in_(list(ids)), _c.deleted_at.is_(None))
        .order_by(_c.client_bookmark_id)
        .with_for_update()
    )
    return [Bookmark.from_row(row) for row in (await session.execute(statement)).mappings()]


async def live_by_query(session: AsyncSession, owner: uuid.UUID, query: Query, *, limit: int) -> list[Bookmark]:
    """Up to ``limit`` live bookmarks matching ``query`` (§ search), locked, in id order."""
    match, _ = await context(await session.connection(), query, owner)
    statement = (
        select(*BOOKMARK_COLUMNS)
        .where(*every_match(query, match, COLUMNS, owner))
        .order_by(_c.client_bookmark_id)
        .limit(limit)
        .with_for_update()
    )
    return [Bookmark.from_row(row) for row in (await session.execute(statement)).mappings()]


async def all_by_ids(session: AsyncSession, owner: uuid.UUID, ids: Sequence[str]) -> dict[str, Bookmark]:
    """The rows of ``ids`` (tombstones too), locked."""
    statement = (
        select(*BOOKMARK_COLUMNS)
        .where(_c.owner_uid == owner, _c.client_bookmark_id.in_(list(ids)))
        .order_by(_c.client_bookmark_id)
        .with_for_update()
    )
    found = [Bookmark.from_row(row) for row in (await session.execute(statement)).mappings()]
    return {record.client_bookmark_id: record for record in found}


async def save_operation(
    session: AsyncSession, *, token_hash: str, owner: uuid.UUID, expires_at: datetime, changes: list[dict[str, Any]]
) -> None:
    await session.execute(
        insert(bulk_operations).values(token_hash=token_hash, owner_uid=owner, expires_at=expires_at, changes=changes)
    )


async def take_operation(
    session: AsyncSession, *, token_hash: str, owner: uuid.UUID, now: datetime
) -> list[dict[str, Any]] | None:
    """The changes of the owner's operation, marked undone; None when unknown, another user's, expired or
    already undone."""
    statement = (
        update(bulk_operations)
        .where(
            _ops.token_hash == token_hash,
            _ops.owner_uid == owner,
            _ops.expires_at > now,
            _ops.undone_at.is_(None),
        )
        .values(undone_at=now)
        .returning(_ops.changes)
    )
    changes = (await session.execute(statement)).scalar_one_or_none()
    return None if changes is None else list(changes)


async def delete_expired(session: AsyncSession, *, now: datetime) -> int:
    result = await session.execute(delete(bulk_operations).where(_ops.expires_at <= now))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]
