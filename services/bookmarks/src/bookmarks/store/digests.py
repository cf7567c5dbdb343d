"""Reads behind anti-entropy (common.anti_entropy): digests of users' live bookmarks (id → normalized URL),
the per-id hashes of some buckets, and the rows to re-publish.

Users are walked in ``user_streams`` (one row per user who ever wrote); a user's rows are read through
``ix_bookmarks_stream`` (owner first).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.model import Bookmark
from bookmarks.store.tables import BOOKMARK_COLUMNS, bookmarks, user_streams
from common.anti_entropy import bucket_of, record_hash

_BUCKET = bucket_of(bookmarks.c.client_bookmark_id)
_HASH = record_hash(bookmarks.c.client_bookmark_id, bookmarks.c.normalized_url)
_LIVE = bookmarks.c.deleted_at.is_(None)


async def user_page(session: AsyncSession, *, after: uuid.UUID | None, limit: int) -> list[uuid.UUID]:
    """Up to ``limit`` users after ``after``, in id order."""
    statement = select(user_streams.c.owner_uid).order_by(user_streams.c.owner_uid).limit(limit)
    if after is not None:
        statement = statement.where(user_streams.c.owner_uid > after)
    return list((await session.execute(statement)).scalars())


def _digest_statement(owners: ColumnElement[bool]) -> Select[Any]:
    bucket = _BUCKET.label("bucket")
    return (
        select(bookmarks.c.owner_uid, bucket, func.count(), func.bit_xor(_HASH))
        .where(owners, _LIVE)
        .group_by(bookmarks.c.owner_uid, bucket)
    )


async def digests(session: AsyncSession, owners: Sequence[uuid.UUID]) -> dict[uuid.UUID, dict[int, tuple[int, int]]]:
    """Per user, bucket → (count, bit_xor of hashes) of the live bookmarks; users without any map to {}."""
    found: dict[uuid.UUID, dict[int, tuple[int, int]]] = {owner: {} for owner in owners}
    if owners:
        rows = await session.execute(_digest_statement(bookmarks.c.owner_uid.in_(owners)))
        for owner, bucket, count, xor in rows.tuples():
            found[owner][bucket] = (count, xor)
    return found


async def record_hashes(session: AsyncSession, owner: uuid.UUID, buckets: Sequence[int]) -> dict[str, int]:
    """id → hash of the owner's live bookmarks in ``buckets``."""
    statement = select(bookmarks.c.client_bookmark_id, _HASH).where(
        bookmarks.c.owner_uid == owner, _LIVE, _BUCKET.in_(buckets)
    )
    return dict((await session.execute(statement)).tuples().all())


async def changed_since(session: AsyncSession, owner: uuid.UUID, buckets: Sequence[int], since: datetime) -> list[str]:
    """Ids in ``buckets`` (live or deleted) whose position is after ``since``."""
    statement = select(bookmarks.c.client_bookmark_id).where(
        bookmarks.c.owner_uid == owner, bookmarks.c.updated_at > since, _BUCKET.in_(buckets)
    )
    return list((await session.execute(statement)).scalars())


async def by_ids(session: AsyncSession, owner: uuid.UUID, ids: Sequence[str]) -> list[Bookmark]:
    """The owner's bookmarks (tombstones too) among ``ids``."""
    statement = select(*BOOKMARK_COLUMNS).where(bookmarks.c.owner_uid == owner, bookmarks.c.client_bookmark_id.in_(ids))
    return [Bookmark.from_row(row) for row in (await session.execute(statement)).mappings()]
