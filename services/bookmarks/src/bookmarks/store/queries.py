"""Reads of the bookmarks database: the per-user delta stream of bookmarks and collections.

Bookmarks and collections share one stream: positions of both come from the same per-user allocator
(``repository.allocate_positions``), so one cursor ``(updated_at, id)`` orders them together. A page is
one statement (one round trip, one snapshot): the two keyset range scans (``ix_bookmarks_stream`` and
``ix_collections_stream``, each starting at the cursor: page N costs what page 1 costs) are merged by a
``UNION ALL``. Each branch carries its own table's columns under a prefix and NULLs for the other's, so
every row maps back onto its frozen domain object with no column list written out here.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Column, Select, Table, Text, literal, null, select, tuple_, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.collections import Collection
from bookmarks.domain.cursor import StreamPosition
from bookmarks.domain.model import Bookmark
from bookmarks.store.tables import BOOKMARK_COLUMNS, bookmarks, collections, user_streams

StreamRecord = Bookmark | Collection

_B, _C = "b_", "c_"


def _columns(table: Table) -> Sequence[Column[Any]]:
    return BOOKMARK_COLUMNS if table is bookmarks else tuple(table.columns)  # no search index in delta


def _padded(table: Table, own: str, other: Table, other_prefix: str) -> list[Any]:
    mine = [c.label(own + c.name) for c in _columns(table)]
    theirs = [null().cast(c.type).label(other_prefix + c.name) for c in _columns(other)]
    return mine + theirs if own == _B else theirs + mine


def _branch(table: Table, id_column: Column[str], owner: uuid.UUID, after: StreamPosition | None,
            limit: int) -> Select[Any]:
    kind = literal(table.name, Text())
    own, other, other_prefix = (_B, collections, _C) if table is bookmarks else (_C, bookmarks, _B)
    statement = select(
        kind.label("kind"), table.c.updated_at.label("pos"), id_column.label("rid"),
        *_padded(table, own, other, other_prefix),
    ).where(table.c.owner_uid == owner)
    if after is not None:
        statement = statement.where(
            tuple_(table.c.updated_at, id_column) > tuple_(literal(after.updated_at), literal(after.record_id))
        )
    return statement.order_by(table.c.updated_at, id_column).limit(limit)


async def delta_page(
    session: AsyncSession, owner: uuid.UUID, after: StreamPosition | None, limit: int
) -> tuple[list[StreamRecord], bool]:
    """Up to ``limit`` records strictly after ``after`` in stream order, and the owner's Pro flag."""
    merged = union_all(
        _branch(bookmarks, bookmarks.c.client_bookmark_id, owner, after, limit),
        _branch(collections, collections.c.collection_id, owner, after, limit),
    ).subquery("stream")
    # The plan flag rides along as a scalar subquery (an InitPlan, evaluated once).
    is_pro = select(user_streams.c.is_pro).where(user_streams.c.owner_uid == owner).scalar_subquery()
    statement = select(merged, is_pro.label("owner_is_pro")).order_by(merged.c.pos, merged.c.rid).limit(limit)
    rows: Sequence[Any] = (await session.execute(statement)).mappings().all()
    records: list[StreamRecord] = [
        Bookmark.from_row(r, _B) if r["kind"] == bookmarks.name else Collection.from_row(r, _C) for r in rows
    ]
    return records, bool(rows[0]["owner_is_pro"]) if rows else False


async def is_pro(session: AsyncSession, owner: uuid.UUID) -> bool:
    row = (await session.execute(select(user_streams.c.is_pro).where(user_streams.c.owner_uid == owner))).first()
    return bool(row.is_pro) if row is not None else False
