"""Reads of a whole library for an export (docs/api-guide.md, section 13): live collections and live bookmarks.

Bookmarks come from one statement read through a server-side cursor in partitions, so a library of any
size is never held in memory; the caller runs it inside one REPEATABLE READ transaction (one snapshot).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

from sqlalchemy import ARRAY, ColumnElement, Select, Text, func, literal, or_, select
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


class Document(NamedTuple):
    """A bookmark's or a highlight's JSON text as PostgreSQL rendered it (api/wire.py), by bookmark id."""

    client_bookmark_id: str
    text: str


class _OfBookmark(Protocol):
    @property
    def client_bookmark_id(self) -> str: ...


B = TypeVar("B", bound=_OfBookmark)
H = TypeVar("H", bound=_OfBookmark)


def document_of(row: Mapping[str, Any]) -> Document:
    return Document(row["client_bookmark_id"], row["document"])


class Annotatable(NamedTuple):
    """What the highlight formats show of a bookmark (``exports.annotated.Annotating``)."""

    client_bookmark_id: str
    url: str
    title: str | None
    notes: str | None


async def bookmark_batches(
    session: AsyncSession, owner: uuid.UUID, folder_ids: list[str] | None, batch_size: int
) -> AsyncIterator[list[Bookmark]]:
    async for rows in _partitions(session, bookmarks_statement(owner, folder_ids), batch_size):
        yield [Bookmark.from_row(r) for r in rows]


async def annotatable_batches(
    session: AsyncSession, owner: uuid.UUID, batch_size: int
) -> AsyncIterator[list[Annotatable]]:
    """Live bookmarks with notes or live highlights, oldest first, only the columns those formats show:
    a fifth of the row's decoding and no record to build."""
    columns = [bookmarks.c[name] for name in Annotatable._fields]
    statement = bookmarks_statement(owner, None, annotated_only=True).with_only_columns(*columns)
    async for rows in _partitions(session, statement, batch_size):
        yield [Annotatable(**r) for r in rows]


async def document_batches(
    session: AsyncSession, owner: uuid.UUID, batch_size: int, document: ColumnElement[str]
) -> AsyncIterator[list[Document]]:
    """Live bookmarks, oldest first, as ``document`` renders them (an expression over the bookmarks table)."""
    columns = (bookmarks.c.client_bookmark_id, document.label("document"))
    statement = bookmarks_statement(owner, None).with_only_columns(*columns)
    async for rows in _partitions(session, statement, batch_size):
        yield [document_of(r) for r in rows]


async def _partitions(
    session: AsyncSession, statement: Select[Any], batch_size: int
) -> AsyncIterator[Sequence[Mapping[str, Any]]]:
    result = await session.stream(statement.execution_options(yield_per=batch_size))
    async for rows in result.mappings().partitions(batch_size):
        yield rows


def highlights_statement(
    owner: uuid.UUID, bookmark_ids: Sequence[str], columns: Sequence[ColumnElement[Any]] = ()
) -> Select[Any]:
    """The live highlights of ``bookmark_ids`` (their ``columns``, else whole), grouped by bookmark in that
    order, each bookmark's in reading order (unanchored last), then oldest first."""
    ids = func.unnest(literal(list(bookmark_ids), ARRAY(Text))).table_valued("id", with_ordinality="n")
    ids = ids.render_derived("ids")
    h = highlights.c
    return (
        select(*columns or [highlights])
        .select_from(ids.join(highlights, h.client_bookmark_id == ids.c.id))
        .where(h.owner_uid == owner, h.deleted_at.is_(None))
        .order_by(ids.c.n, h.quote_start.asc().nulls_last(), h.created_at, h.highlight_id)
    )


def with_highlights(
    session: AsyncSession, owner: uuid.UUID, batch: Sequence[Annotatable], batch_size: int
) -> AsyncIterator[list[tuple[Annotatable, list[Highlight]]]]:
    """``batch`` in order, each bookmark with its live highlights as records (:func:`_pieces`)."""
    statement = highlights_statement(owner, [b.client_bookmark_id for b in batch])
    return _pieces(session, statement, batch, Highlight.from_row, batch_size)


def with_highlight_documents(
    session: AsyncSession, owner: uuid.UUID, batch: Sequence[Document], batch_size: int, document: ColumnElement[str]
) -> AsyncIterator[list[tuple[Document, list[Document]]]]:
    """``batch`` in order, each bookmark document with its live highlights as ``document`` renders them
    (an expression over the highlights table)."""
    columns = (highlights.c.client_bookmark_id, document.label("document"))
    statement = highlights_statement(owner, [b.client_bookmark_id for b in batch], columns)
    return _pieces(session, statement, batch, document_of, batch_size)


async def _pieces(
    session: AsyncSession,
    statement: Select[Any],
    batch: Sequence[B],
    read: Callable[[Mapping[str, Any]], H],
    batch_size: int,
) -> AsyncIterator[list[tuple[B, list[H]]]]:
    """``batch`` in order, each with its highlights (``statement``'s rows read by ``read``), in pieces of
    about ``batch_size`` highlights (a piece ends with a bookmark): highlights stream through a server-side
    cursor, so memory holds one piece and one bookmark's highlights at most."""
    piece: list[tuple[B, list[H]]] = []
    held = 0
    index = 0
    current: list[H] = []
    async for rows in _partitions(session, statement, batch_size):
        for row in rows:
            record = read(row)
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
