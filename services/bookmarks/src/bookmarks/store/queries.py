"""Reads of the bookmarks database."""

from __future__ import annotations

import uuid

from sqlalchemy import RowMapping, text
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.cursor import StreamPosition

# Both statements are served by ix_bookmarks_stream (owner_uid, updated_at, client_bookmark_id):
# an index range scan that starts at the cursor, so page N costs what page 1 costs (no OFFSET).
# The plan flag rides along as an scalar subquery (an InitPlan, evaluated once) so a
# page is one round trip and one snapshot.
_SELECT = "SELECT b.*, (SELECT is_pro FROM user_streams WHERE owner_uid = :o) AS owner_is_pro FROM bookmarks b "
_PAGE_FROM_START = text(_SELECT + "WHERE owner_uid = :o ORDER BY updated_at, client_bookmark_id LIMIT :n")
_PAGE_AFTER = text(
    _SELECT + "WHERE owner_uid = :o AND (updated_at, client_bookmark_id) > (:t, :id) "
    "ORDER BY updated_at, client_bookmark_id LIMIT :n"
)


async def delta_page(
    session: AsyncSession, owner: uuid.UUID, after: StreamPosition | None, limit: int
) -> list[RowMapping]:
    """Up to ``limit`` records strictly after ``after`` in stream order (upserts and tombstones)."""
    if after is None:
        result = await session.execute(_PAGE_FROM_START, {"o": owner, "n": limit})
    else:
        result = await session.execute(
            _PAGE_AFTER, {"o": owner, "t": after.updated_at, "id": after.client_bookmark_id, "n": limit}
        )
    return list(result.mappings())


async def is_pro(session: AsyncSession, owner: uuid.UUID) -> bool:
    result = await session.execute(text("SELECT is_pro FROM user_streams WHERE owner_uid = :o"), {"o": owner})
    row = result.first()
    return bool(row.is_pro) if row is not None else False
