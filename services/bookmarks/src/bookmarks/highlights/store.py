"""Reads and writes of the ``highlights`` table (``ix_highlights_stream``, ``ix_highlights_bookmark``)."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import (
    ARRAY,
    UUID,
    ColumnElement,
    Interval,
    Text,
    and_,
    bindparam,
    func,
    literal,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.dml import Update
from sqlalchemy.sql.selectable import CTE

from bookmarks.domain.model import Bookmark
from bookmarks.highlights.rules import Highlight
from bookmarks.search.index import highlights_rows, highlights_statement
from bookmarks.search.sql import highlight_texts
from bookmarks.store.tables import BOOKMARK_COLUMNS, bookmarks, highlights, page_texts, user_streams

_c = highlights.c
_KEY = ("owner_uid", "highlight_id")


async def get_for_update(session: AsyncSession, owner: uuid.UUID, highlight_id: str) -> Highlight | None:
    statement = select(highlights).where(_c.owner_uid == owner, _c.highlight_id == highlight_id).with_for_update()
    row = (await session.execute(statement)).mappings().first()
    return Highlight.from_row(row) if row is not None else None


async def put(session: AsyncSession, records: Sequence[Highlight]) -> None:
    """Insert or replace every column of each record: one executemany."""
    if not records:
        return
    statement = insert(highlights)
    replaced = {c.name: statement.excluded[c.name] for c in highlights.columns if c.name not in _KEY}
    await session.execute(
        statement.on_conflict_do_update(index_elements=list(_KEY), set_=replaced), [r.to_row() for r in records]
    )


async def live_counts(session: AsyncSession, owner: uuid.UUID, client_bookmark_id: str) -> tuple[int, int]:
    """(live highlights on the bookmark, live highlights of the user)."""
    statement = select(
        func.count().filter(_c.client_bookmark_id == client_bookmark_id),
        func.count(),
    ).where(_c.owner_uid == owner, _c.deleted_at.is_(None))
    on_bookmark, of_user = (await session.execute(statement)).one()
    return int(on_bookmark), int(of_user)


async def _select(session: AsyncSession, *where: ColumnElement[bool]) -> list[Highlight]:
    statement = select(highlights).where(*where).order_by(_c.client_bookmark_id, _c.highlight_id).with_for_update()
    return [Highlight.from_row(row) for row in (await session.execute(statement)).mappings()]


async def live_on(session: AsyncSession, owner: uuid.UUID, bookmark_ids: Sequence[str]) -> list[Highlight]:
    """The live highlights of these bookmarks, locked, in a stable order."""
    if not bookmark_ids:
        return []
    return await _select(
        session, _c.owner_uid == owner, _c.client_bookmark_id.in_(bookmark_ids), _c.deleted_at.is_(None)
    )


_OWNER = bindparam("owner", type_=UUID(as_uuid=True))
_IDS = bindparam("ids", type_=ARRAY(Text))
_MICRO = literal(timedelta(microseconds=1), Interval())


Values = Callable[[CTE], dict[str, Any]]


def _restreamed(
    scope: ColumnElement[bool], chosen: ColumnElement[bool], values: Values, *extra: ColumnElement[Any]
) -> Update:
    """Update the owner's highlights of the bookmarks ``scope`` names (an indexed condition on
    ``client_bookmark_id``) that ``chosen`` picks with ``values`` (of the ranked rows, which carry
    ``extra``), each at a new stream position after the user's last one, in highlight id order, and move
    the stream head past them: one statement. The caller holds the stream row's lock (every write of the
    user takes it first), so no other write hands out these positions meanwhile.

    The ranked rows are MATERIALIZED (computed once) and a highlight's bookmark is read by its key
    (:func:`_bookmark_deleted_at`): with a join or an inlined subquery the planner, misled by a fresh
    table's estimates, could read every bookmark of the user for each highlight (quadratic)."""
    base = select(user_streams.c.last_position).where(user_streams.c.owner_uid == _OWNER).scalar_subquery()
    ranked = (
        select(_c.highlight_id, func.row_number().over(order_by=_c.highlight_id).label("n"), *extra)
        .where(_c.owner_uid == _OWNER, scope, chosen)
        .cte("ranked")
        .prefix_with("MATERIALIZED")
    )
    changed = (
        update(highlights)
        .where(_c.owner_uid == _OWNER, scope, _c.highlight_id == ranked.c.highlight_id)
        .values(updated_at=base + ranked.c.n * _MICRO, **values(ranked))
        .returning(_c.highlight_id)
        .cte("changed")
    )
    head = base + select(func.count()).select_from(changed).scalar_subquery() * _MICRO
    return update(user_streams).where(user_streams.c.owner_uid == _OWNER).values(last_position=head)


def _following(ranked: CTE) -> dict[str, Any]:
    gone = ranked.c.bookmark_deleted_at
    return {"deleted_at": gone, "with_bookmark": gone.is_not(None)}


def _bookmark_deleted_at() -> ColumnElement[Any]:
    """The highlight's bookmark's ``deleted_at``, read by the bookmark's key (one index probe a row)."""
    b = bookmarks.c
    return (
        select(b.deleted_at)
        .where(b.owner_uid == _c.owner_uid, b.client_bookmark_id == _c.client_bookmark_id)
        .scalar_subquery()
    )


@functools.cache
def _follow_statement() -> Update:
    """The highlights of the bookmarks ``ids`` follow them: a live highlight of a deleted bookmark is
    deleted with it (at its deletion time, marked ``with_bookmark``), and one deleted with its bookmark
    lives again once the bookmark does (a restore)."""
    gone = _bookmark_deleted_at()
    chosen = or_(
        and_(_c.deleted_at.is_(None), gone.is_not(None)),
        and_(_c.deleted_at.is_not(None), _c.with_bookmark, gone.is_(None)),
    )
    return _restreamed(_c.client_bookmark_id == func.any(_IDS), chosen, _following, gone.label("bookmark_deleted_at"))


def deleted_with_bookmark_ctes() -> tuple[CTE, CTE]:
    """CTEs for the statement that writes one bookmark's tombstone (bound as its columns: ``owner_uid``,
    ``client_bookmark_id``, ``deleted_at``, ``updated_at``): its live highlights are deleted with it, at
    the positions right after the bookmark's, and the stream head moves past them. Part of that one
    statement, so a delete stays one round trip after opening the stream (the CTEs see the rows as they
    were when it began, which for highlights is all they need).

    The statement runs with the bookmark row's parameters, named like its columns, and SQLAlchemy makes an
    UPDATE set every column named like an execution parameter, CTEs included: each UPDATE here sets those
    columns of its own table to themselves (:func:`_kept`), so a highlight never takes the bookmark's
    ``created_at``."""
    owner = bindparam("owner_uid", type_=UUID(as_uuid=True))
    position = bindparam("updated_at", type_=highlights.c.updated_at.type)
    of_bookmark = _c.client_bookmark_id == bindparam("client_bookmark_id", type_=Text())
    ranked = (
        select(_c.highlight_id, func.row_number().over(order_by=_c.highlight_id).label("n"))
        .where(_c.owner_uid == owner, of_bookmark, _c.deleted_at.is_(None))
        .cte("live_marks")
        .prefix_with("MATERIALIZED")
    )
    followed = (
        update(highlights)
        .where(_c.owner_uid == owner, of_bookmark, _c.highlight_id == ranked.c.highlight_id)
        .values(
            _kept(highlights)
            | {
                "deleted_at": bindparam("deleted_at", type_=highlights.c.deleted_at.type),
                "with_bookmark": True,
                "updated_at": position + ranked.c.n * _MICRO,
            }
        )
        .returning(_c.highlight_id)
        .cte("followed")
    )
    count = select(func.count()).select_from(followed).scalar_subquery()
    head = (
        update(user_streams)
        .where(user_streams.c.owner_uid == owner, count > 0)
        .values(
            _kept(user_streams)
            | {"last_position": func.greatest(user_streams.c.last_position, position + count * _MICRO)}
        )
        .returning(user_streams.c.owner_uid)
        .cte("followed_head")
    )
    return followed, head


def _kept(table: Any) -> dict[str, Any]:
    """``table``'s columns named like a bookmark row's, each set to itself (see
    :func:`deleted_with_bookmark_ctes`); an explicit value given beside these replaces its entry."""
    return {c.name: c for c in table.c if c.name in bookmarks.c}


async def follow_bookmarks(session: AsyncSession, owner: uuid.UUID, bookmark_ids: Sequence[str]) -> None:
    """:func:`_follow_statement` in a session's transaction (bulk changes, restores)."""
    if bookmark_ids:
        await session.execute(_follow_statement(), {"owner": owner, "ids": list(bookmark_ids)})
        await reindex(session, owner, bookmark_ids, only_revived=True)


async def move_to(session: AsyncSession, owner: uuid.UUID, from_ids: Sequence[str], keep: str) -> None:
    """Give the kept bookmark of a duplicates merge every highlight of the merged ones, at new positions."""
    if from_ids:
        chosen = _c.client_bookmark_id.in_(from_ids)
        statement = _restreamed(chosen, true(), lambda _: {"client_bookmark_id": literal(keep, Text())})
        await session.execute(statement, {"owner": owner})
        await reindex(session, owner, [keep])


async def forget(session: AsyncSession, owner: uuid.UUID, bookmark_ids: Sequence[str]) -> None:
    """Blank what the highlights of purged bookmarks said (their tombstones stay in the stream) and drop
    the bookmarks' readable text."""
    if not bookmark_ids:
        return
    texts = page_texts.delete().where(
        page_texts.c.owner_uid == owner, page_texts.c.client_bookmark_id.in_(bookmark_ids)
    )
    await session.execute(texts)
    statement = (
        update(highlights)
        .where(
            _c.owner_uid == owner,
            _c.client_bookmark_id.in_(bookmark_ids),
            _c.deleted_at.is_not(None),
        )
        .values(quote="", prefix="", suffix="", note="", with_bookmark=False)
    )
    await session.execute(statement)


async def purge_user(session: AsyncSession, owner: uuid.UUID) -> None:
    for table in (highlights, page_texts):
        await session.execute(table.delete().where(table.c.owner_uid == owner))


async def copy_page_texts(
    session: AsyncSession, source: uuid.UUID, target: uuid.UUID, bookmark_ids: Sequence[str]
) -> None:
    if not bookmark_ids:
        return
    p = page_texts.c
    rows = select(literal(target, UUID(as_uuid=True)), p.client_bookmark_id, p.text).where(
        p.owner_uid == source, p.client_bookmark_id.in_(bookmark_ids)
    )
    statement = insert(page_texts).from_select(["owner_uid", "client_bookmark_id", "text"], rows)
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=["owner_uid", "client_bookmark_id"], set_={"text": statement.excluded.text}
        )
    )


async def owned_by(session: AsyncSession, owner: uuid.UUID) -> list[Highlight]:
    return await _select(session, _c.owner_uid == owner)


async def reindex(
    session: AsyncSession, owner: uuid.UUID, bookmark_ids: Sequence[str], *, only_revived: bool = False
) -> None:
    """Rebuild the search index's highlight part of these live bookmarks from their live highlights, in
    the caller's transaction (which holds the user's stream lock, so the bookmarks read stay current).
    ``only_revived``: only bookmarks with live highlights and none indexed (highlights just restored with
    their bookmark), skipping the rest of a bulk change, whose index kept its highlight part."""
    if not bookmark_ids:
        return
    b = bookmarks.c
    where = [b.owner_uid == owner, b.client_bookmark_id.in_(bookmark_ids), b.deleted_at.is_(None)]
    if only_revived:
        live = select(_c.highlight_id).where(
            _c.owner_uid == owner, _c.client_bookmark_id == b.client_bookmark_id, _c.deleted_at.is_(None)
        )
        where += [b.search_highlight_texts == literal([], ARRAY(Text)), live.exists()]
    rows = (await session.execute(select(*BOOKMARK_COLUMNS).where(*where))).mappings().all()
    records = [Bookmark.from_row(row) for row in rows]
    if not records:
        return
    await reindex_records(session, owner, records)


async def reindex_records(session: AsyncSession, owner: uuid.UUID, records: Sequence[Bookmark]) -> None:
    """:func:`reindex` of live records the caller has read under the stream lock."""
    pieces: dict[str, list[str]] = {r.client_bookmark_id: [] for r in records}
    texts = (
        select(_c.client_bookmark_id, _c.quote, _c.note)
        .where(_c.owner_uid == owner, _c.client_bookmark_id.in_(list(pieces)), _c.deleted_at.is_(None))
        .order_by(_c.client_bookmark_id, _c.created_at, _c.highlight_id)
    )
    for row in await session.execute(texts):
        pieces[row.client_bookmark_id] += [row.quote, row.note]
    rows = highlights_rows([(r, highlight_texts(pieces[r.client_bookmark_id])) for r in records])
    await session.execute(highlights_statement(), {"owner": owner, "rows": rows})


async def known_on(session: AsyncSession, owner: uuid.UUID, bookmark_ids: Sequence[str]) -> list[Highlight]:
    """Every highlight (deleted ones too) of these bookmarks: what an import must not write again."""
    if not bookmark_ids:
        return []
    statement = select(highlights).where(_c.owner_uid == owner, _c.client_bookmark_id.in_(list(bookmark_ids)))
    return [Highlight.from_row(row) for row in (await session.execute(statement)).mappings()]


async def live_count(session: AsyncSession, owner: uuid.UUID) -> int:
    statement = select(func.count()).where(_c.owner_uid == owner, _c.deleted_at.is_(None))
    return int((await session.execute(statement)).scalar_one())


async def page_texts_of(session: AsyncSession, owner: uuid.UUID, bookmark_ids: Sequence[str]) -> dict[str, str]:
    """The readable text of these bookmarks, for those that have one."""
    if not bookmark_ids:
        return {}
    p = page_texts.c
    statement = select(p.client_bookmark_id, p.text).where(
        p.owner_uid == owner, p.client_bookmark_id.in_(list(bookmark_ids))
    )
    return {row.client_bookmark_id: row.text for row in await session.execute(statement)}
