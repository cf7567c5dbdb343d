"""Reads of a whole library for an export (docs/api-guide.md, section 13): live collections and live bookmarks.

Bookmarks come from one statement read through a server-side cursor in partitions, so a library of any
size is never held in memory; the caller runs it inside one REPEATABLE READ transaction (one snapshot).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from sqlalchemy import ARRAY, Select, Text, func, literal, select
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.collections import Collection
from bookmarks.domain.model import Bookmark
from bookmarks.store.tables import BOOKMARK_COLUMNS, bookmarks, collections


async def live_collections(session: AsyncSession, owner: uuid.UUID) -> list[Collection]:
    """At most ``MAX_LIVE`` (1,000) rows: the tree is small enough to hold."""
    statement = select(collections).where(collections.c.owner_uid == owner, collections.c.deleted_at.is_(None))
    rows: Sequence[Any] = (await session.execute(statement)).mappings().all()
    return [Collection.from_row(r) for r in rows]


def bookmarks_statement(owner: uuid.UUID, folder_ids: list[str] | None) -> Select[Any]:
    """Live bookmarks, oldest first; with ``folder_ids`` (collection ids in pre-order) grouped by the
    pre-order rank of each bookmark's first collection among them (none: first)."""
    statement = select(*BOOKMARK_COLUMNS).where(bookmarks.c.owner_uid == owner, bookmarks.c.deleted_at.is_(None))
    oldest_first = (bookmarks.c.created_at, bookmarks.c.client_bookmark_id)
    if folder_ids is None:
        return statement.order_by(*oldest_first)
    return statement.order_by(_folder_rank(folder_ids).asc().nulls_first(), *oldest_first)


def _folder_rank(folder_ids: list[str]) -> Any:
    member = func.unnest(bookmarks.c.collection_ids).table_valued("cid", with_ordinality="n").render_derived("m")
    position = func.array_position(literal(folder_ids, ARRAY(Text)), member.c.cid)
    first_known = select(position).select_from(member).where(position.is_not(None)).order_by(member.c.n).limit(1)
    return first_known.scalar_subquery()


async def bookmark_batches(
    session: AsyncSession, owner: uuid.UUID, folder_ids: list[str] | None, batch_size: int
) -> AsyncIterator[list[Bookmark]]:
    statement = bookmarks_statement(owner, folder_ids).execution_options(yield_per=batch_size)
    result = await session.stream(statement)
    async for rows in result.mappings().partitions(batch_size):
        yield [Bookmark.from_row(r) for r in rows]
