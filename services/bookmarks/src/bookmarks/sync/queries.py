"""The delta page's read: the per-user stream of bookmarks, collections and highlights.

The three share one stream: positions of all come from the same per-user allocator
(``repository.allocate_positions``), so one cursor ``(updated_at, id)`` orders them together. A page is
one statement (one round trip, one snapshot): the keyset range scans (``ix_bookmarks_stream``,
``ix_collections_stream`` and ``ix_highlights_stream``, each starting at the cursor: page N costs what
page 1 costs) are merged by a ``UNION ALL``. Each record's wire document is rendered by PostgreSQL with
the expressions the wire layer compiles from its models (``api/wire.py``, gathered in
:mod:`bookmarks.sync.documents`), and the page comes back as
one row: each group's documents joined in stream order, the count, whether more follow, and the last
position (for the next cursor).
A page of 1,000 records thus costs no Python object per record.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    UUID,
    ColumnElement,
    DateTime,
    Integer,
    Select,
    Table,
    Text,
    and_,
    bindparam,
    case,
    func,
    literal,
    select,
    tuple_,
    union_all,
)
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.cursor import StreamPosition
from bookmarks.store.tables import bookmarks, collections, highlights, user_streams


@dataclass(frozen=True, slots=True)
class DeltaDocuments:
    """SQL expressions rendering one row of each table as its wire JSON (text), live or tombstone."""

    bookmark: Callable[[Table, ColumnElement[bool]], ColumnElement[Any]]
    bookmark_tombstone: Callable[[Table], ColumnElement[Any]]
    collection: Callable[[Table], ColumnElement[Any]]
    collection_tombstone: Callable[[Table], ColumnElement[Any]]
    highlight: Callable[[Table], ColumnElement[Any]]
    highlight_tombstone: Callable[[Table], ColumnElement[Any]]


@dataclass(frozen=True, slots=True)
class DeltaSlice:
    """One delta page: each group's wire documents already joined by commas (UTF-8 bytes, empty when
    the group is), how many records the page holds, whether more follow, and the last record's position."""

    bookmarks: bytes
    bookmark_tombstones: bytes
    collections: bytes
    collection_tombstones: bytes
    highlights: bytes
    highlight_tombstones: bytes
    count: int
    more: bool
    last: StreamPosition | None


_OWNER = bindparam("owner", type_=UUID(as_uuid=True))
_AFTER_POS = bindparam("after_pos", type_=DateTime(timezone=True))
_AFTER_ID = bindparam("after_id", type_=Text())
_LIMIT = bindparam("limit", type_=Integer())


_ID_COLUMNS = {
    bookmarks.name: bookmarks.c.client_bookmark_id,
    collections.name: collections.c.collection_id,
    highlights.name: highlights.c.highlight_id,
}


def _branch(table: Table, resume: bool, live: ColumnElement[Any], tombstone: ColumnElement[Any]) -> Select[Any]:
    id_column = _ID_COLUMNS[table.name]
    deleted = table.c.deleted_at.is_not(None)
    statement = select(
        literal(table.name, Text()).label("kind"),
        table.c.updated_at.label("pos"),
        id_column.label("rid"),
        deleted.label("deleted"),
        case((deleted, tombstone), else_=live).label("doc"),
    ).where(table.c.owner_uid == _OWNER)
    if resume:
        statement = statement.where(tuple_(table.c.updated_at, id_column) > tuple_(_AFTER_POS, _AFTER_ID))
    return statement.order_by(table.c.updated_at, id_column).limit(_LIMIT + 1)


@functools.cache
def _delta_statement(documents: DeltaDocuments, resume: bool) -> Select[Any]:
    """Built once per shape; owner, cursor and limit are bind parameters."""
    # The plan flag (Pro gates saveWhy) is a scalar subquery: an InitPlan, evaluated once.
    is_pro = select(user_streams.c.is_pro).where(user_streams.c.owner_uid == _OWNER).scalar_subquery()
    merged = union_all(
        _branch(bookmarks, resume, documents.bookmark(bookmarks, is_pro), documents.bookmark_tombstone(bookmarks)),
        _branch(collections, resume, documents.collection(collections), documents.collection_tombstone(collections)),
        _branch(highlights, resume, documents.highlight(highlights), documents.highlight_tombstone(highlights)),
    ).subquery("stream")
    # One record past the page tells whether more follow; it is counted but not rendered.
    stream_order = (merged.c.pos, merged.c.rid)
    page = select(merged, func.row_number().over(order_by=stream_order).label("n"))
    rows = page.order_by(*stream_order).limit(_LIMIT + 1).subquery("page")
    # Each group joined in stream order, the order the rows arrive in: PostgreSQL (16+) sees it and sorts
    # nothing (ordering by n instead cost a sort of the whole page).
    page_order = (rows.c.pos, rows.c.rid)
    in_page = rows.c.n <= _LIMIT
    last = rows.c.n == _LIMIT

    def joined(kind: Table, deleted: bool) -> ColumnElement[Any]:
        chosen = and_(in_page, rows.c.kind == kind.name, rows.c.deleted.is_(deleted))
        text = func.string_agg(rows.c.doc, aggregate_order_by(literal(",", Text()), *page_order)).filter(chosen)
        return func.convert_to(func.coalesce(text, ""), "UTF8")

    return select(
        joined(bookmarks, False),
        joined(bookmarks, True),
        joined(collections, False),
        joined(collections, True),
        joined(highlights, False),
        joined(highlights, True),
        func.count().filter(in_page),
        func.count() > _LIMIT,
        func.max(rows.c.pos).filter(last),
        func.max(rows.c.rid).filter(last),
    )


async def delta_page(
    session: AsyncSession, owner: uuid.UUID, after: StreamPosition | None, limit: int, documents: DeltaDocuments
) -> DeltaSlice:
    """Up to ``limit`` records strictly after ``after`` in stream order, rendered by ``documents``: one
    statement, one row back, whatever the page's size."""
    parameters: dict[str, Any] = {"owner": owner, "limit": limit}
    if after is not None:
        parameters |= {"after_pos": after.updated_at, "after_id": after.record_id}
    row = (await session.execute(_delta_statement(documents, after is not None), parameters)).one()
    upserts, tombstones, folders, folder_tombstones, marks, mark_tombstones, count, more, last_pos, last_id = row
    last = StreamPosition(last_pos, last_id) if last_pos is not None else None
    return DeltaSlice(
        upserts, tombstones, folders, folder_tombstones, marks, mark_tombstones, count=count, more=more, last=last
    )
