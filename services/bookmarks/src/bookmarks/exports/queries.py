"""Reads of a whole library for an export (docs/api-guide.md, section 13): live collections and live bookmarks.

Bookmarks come from one statement read through a server-side cursor in partitions, so a library of any
size is never held in memory; the caller runs it inside one REPEATABLE READ transaction (one snapshot).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from sqlalchemy import ARRAY, Select, Text, func, literal, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.collections import Collection
from bookmarks.domain.model import Bookmark
from bookmarks.highlights.rules import Highlight
from bookmarks.store.tables import BOOKMARK_COLUMNS, bookmarks, collections, highlights


async def live_collections(session: AsyncSession, owner: uuid.UUID) -> list[Collection]:
    """At most ``MAX_LIVE`` (1,000) rows: the tree is small enough to hold."""
    statement = select(collections).where(collections.c.owner_uid == owner, collections.c.deleted_at.is_(None))
    rows: Sequence[Any] = (await session.execute(statement)).mappings().all()
    return [Collection.from_row(r) for r in rows]


def bookmarks_statement(owner: uuid.UUID, folder_ids: list[str] | None, *, annotated_only: bool = False) -> Select[Any]:
    """Live bookmarks, oldest first; with ``folder_ids`` (collection ids in pre-order) grouped by the
    pre-order rank of each bookmark's first collection among them (none: first); ``annotated_only``: those
    with notes or live highlights (search keeps the latter's texts on the row)."""
    statement = select(*BOOKMARK_COLUMNS).where(bookmarks.c.owner_uid == owner, bookmarks.c.deleted_at.is_(None))
    if annotated_only:
        statement = statement.where(
            or_(
                func.length(func.btrim(bookmarks.c.notes)) > 0, func.cardinality(bookmarks.c.search_highlight_texts) > 0
            )
        )
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
    session: AsyncSession,
    owner: uuid.UUID,
    folder_ids: list[str] | None,
    batch_size: int,
    *,
    annotated_only: bool = False,
) -> AsyncIterator[list[Bookmark]]:
    statement = bookmarks_statement(owner, folder_ids, annotated_only=annotated_only).execution_options(
        yield_per=batch_size
    )
    result = await session.stream(statement)
    async for rows in result.mappings().partitions(batch_size):
        yield [Bookmark.from_row(r) for r in rows]


def highlights_statement(owner: uuid.UUID, bookmark_ids: Sequence[str]) -> Select[Any]:
    """The live highlights of ``bookmark_ids``, grouped by bookmark in that order, each bookmark's in
    reading order (unanchored last), then oldest first."""
    ids = func.unnest(literal(list(bookmark_ids), ARRAY(Text))).table_valued("id", with_ordinality="n")
    ids = ids.render_derived("ids")
    h = highlights.c
    return (
        select(highlights)
        .select_from(ids.join(highlights, h.client_bookmark_id == ids.c.id))
        .where(h.owner_uid == owner, h.deleted_at.is_(None))
        .order_by(ids.c.n, h.quote_start.asc().nulls_last(), h.created_at, h.highlight_id)
    )


async def with_highlights(
    session: AsyncSession, owner: uuid.UUID, batch: Sequence[Bookmark], batch_size: int
) -> AsyncIterator[list[tuple[Bookmark, list[Highlight]]]]:
    """``batch`` in order, each bookmark with its live highlights, in pieces of about ``batch_size``
    highlights (a piece ends with a bookmark): highlights stream through a server-side cursor, so memory
    holds one piece and one bookmark's highlights at most."""
    statement = highlights_statement(owner, [b.client_bookmark_id for b in batch]).execution_options(
        yield_per=batch_size
    )
    result = await session.stream(statement)
    piece: list[tuple[Bookmark, list[Highlight]]] = []
    held = 0
    index = 0
    current: list[Highlight] = []
    async for rows in result.mappings().partitions(batch_size):
        for row in rows:
            record = Highlight.from_row(row)
            while batch[index].client_bookmark_id != record.client_bookmark_id:
                piece.append((batch[index], current))
                held += len(current)
                index, current = index + 1, []
                if held >= batch_size:
                    yield piece
                    piece, held = [], 0
            current.append(record)
    while index < len(batch):
        piece.append((batch[index], current))
        index, current = index + 1, []
    yield piece
