"""Writes to the bookmarks database, in SQLAlchemy Core over ``store/tables.py``.

Every write of a user's stream first takes a position from :func:`allocate_positions`, which locks the
user's stream row until commit (ARCHITECTURE.md, rule 3). Reads return frozen domain objects.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import (
    CTE,
    Boolean,
    Select,
    Table,
    Text,
    and_,
    bindparam,
    case,
    cast,
    delete,
    distinct,
    exists,
    false,
    func,
    literal,
    select,
    true,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID, Insert, insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.sql.dml import ReturningInsert
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.types import Interval

from bookmarks.domain.collections import Collection
from bookmarks.domain.model import Bookmark
from bookmarks.store import rows
from bookmarks.store.rows import PageText, page_statement, put_parameters, put_statement, put_values
from bookmarks.store.tables import (
    BOOKMARK_COLUMNS,
    bookmarks,
    bulk_operations,
    collections,
    deleted_users,
    merges,
    pending_enrichments,
    user_streams,
)
from common.events import Event
from common.outbox import forget_published_events
from common.tables import OutboxRow
from common.tracing import current_trace_headers

outbox = OutboxRow.__table__  # type: ignore[attr-defined]

# CTEs a tombstone's statement carries besides the row and its event (a cached function, so it can key the
# statement built once): the highlights feature's deletion of the bookmark's highlights.
TombstoneCtes = Callable[[], tuple[CTE, ...]]

ONE_MICROSECOND = timedelta(microseconds=1)


def _micros(n: int) -> Any:
    return literal(n * ONE_MICROSECOND, Interval())


async def allocate_positions(session: AsyncSession, owner: uuid.UUID, count: int = 1) -> tuple[datetime, bool]:
    """Reserve ``count`` consecutive positions (1 µs apart) after every committed one of this user.

    ``GREATEST(clock_timestamp(), last + 1 µs)``: strictly after the last position even if the clock
    stepped back. The upsert holds the stream row's lock until the transaction ends, so positions are
    handed out in commit order and a reader can never pass a position that a later commit fills.
    Returns the first position and the user's Pro flag.
    """
    n = max(1, count)
    statement = (
        insert(user_streams)
        .values(owner_uid=owner, last_position=func.clock_timestamp() + _micros(n - 1))
        .on_conflict_do_update(
            index_elements=[user_streams.c.owner_uid],
            set_={
                "last_position": func.greatest(func.clock_timestamp(), user_streams.c.last_position + _micros(1))
                + _micros(n - 1)
            },
        )
        .returning(user_streams.c.last_position, user_streams.c.is_pro)
    )
    row = (await session.execute(statement)).one()
    last: datetime = row.last_position
    return last - (n - 1) * ONE_MICROSECOND, bool(row.is_pro)


@dataclass(frozen=True, slots=True)
class StreamSlot:
    """What a write of a live user starts from: its position, the Pro flag, and (for a bookmark create)
    the enrichment result that arrived before the bookmark, taken out of ``pending_enrichments``."""

    position: datetime
    is_pro: bool
    pending: dict[str, Any] | None
    bookmark: Bookmark | None = None  # the bookmark a write opened with (open_stream's), under lock


_OWNER = bindparam("owner", type_=UUID(as_uuid=True))
_PENDING_FOR = bindparam("pending_for", type_=Text())


def _position_upsert(*conditions: ColumnElement[bool]) -> ReturningInsert[Any]:
    """The stream-head upsert of :func:`allocate_positions` (one position) for the bound ``owner``,
    proposing no row at all for a deleted user (or unless ``conditions`` hold): the same statement refuses
    a purged user and takes the position."""
    live = ~exists().where(deleted_users.c.owner_uid == _OWNER)
    proposed = select(_OWNER, func.clock_timestamp()).where(live, *conditions)
    return (
        insert(user_streams)
        .from_select([user_streams.c.owner_uid, user_streams.c.last_position], proposed)
        .on_conflict_do_update(
            index_elements=[user_streams.c.owner_uid],
            set_={"last_position": func.greatest(func.clock_timestamp(), user_streams.c.last_position + _micros(1))},
        )
        .returning(user_streams.c.last_position, user_streams.c.is_pro)
    )


def _stream_ctes() -> tuple[CTE, CTE]:
    """The ``alloc`` CTE (user check and position, :func:`_position_upsert`) and the ``pending`` CTE that
    takes ``pending_for``'s early enrichment result when ``want_pending`` and the bookmark does not exist."""
    alloc = _position_upsert().cte("alloc")
    pending = (
        delete(pending_enrichments)
        .where(
            pending_enrichments.c.owner_uid == _OWNER,
            pending_enrichments.c.client_bookmark_id == _PENDING_FOR,
            bindparam("want_pending", type_=Boolean()),
            exists(select(alloc.c.last_position)),
            ~exists().where(bookmarks.c.owner_uid == _OWNER, bookmarks.c.client_bookmark_id == _PENDING_FOR),
        )
        .returning(pending_enrichments.c.event)
        .cte("pending")
    )
    return alloc, pending


@functools.cache
def _open_stream_statement(with_bookmark: bool) -> Select[Any]:
    """:func:`open_stream`'s statement, built once (bound: ``owner``, ``pending_for``, ``want_pending``);
    ``with_bookmark``: it also reads the bookmark ``pending_for`` under lock. The row is read only once the
    position is taken (it refers to ``alloc``), so the stream row is locked first, as in every write of
    the user; a missing bookmark leaves its columns NULL."""
    alloc, pending = _stream_ctes()
    pending_event = select(pending.c.event).scalar_subquery().label("pending")
    if not with_bookmark:
        return select(alloc.c.last_position, alloc.c.is_pro, pending_event).add_cte(pending)
    row = (
        select(*BOOKMARK_COLUMNS)
        .where(
            bookmarks.c.owner_uid == _OWNER,
            bookmarks.c.client_bookmark_id == _PENDING_FOR,
            exists(select(alloc.c.last_position)),
        )
        .with_for_update()
        .cte("existing")
    )
    statement = (
        select(alloc.c.last_position, alloc.c.is_pro, pending_event, *row.c)
        .select_from(alloc.outerjoin(row, true()))
        .add_cte(pending)
    )
    return statement


async def open_stream(
    session: AsyncSession, owner: uuid.UUID, client_bookmark_id: str | None = None, *, take_pending: bool = False
) -> StreamSlot | None:
    """One round trip for what every user write does first: refuse a deleted user (None), take the next
    position (locking the stream row until commit, as :func:`allocate_positions`), and with
    ``client_bookmark_id`` read that bookmark under lock (``StreamSlot.bookmark``); with ``take_pending``
    (a PUT) also take its pending enrichment result if the bookmark does not exist yet.

    Every part of one statement reads the same snapshot, taken when it began (READ COMMITTED). A row that
    exists then is read in its newest version (the lock waits for, and then reads, a concurrent update).
    But a write that waited here for the stream row while another write of the user created this
    bookmark does not see the new row: ``bookmark`` is None although it exists now. So a write that
    found none stores with ``create=True`` (:func:`put_bookmark`), and if that meets a row it reads it
    again (:func:`get_for_update`, a new statement with a new snapshot) and merges."""
    parameters = {"owner": owner, "pending_for": client_bookmark_id or "", "want_pending": take_pending}
    statement = _open_stream_statement(client_bookmark_id is not None)
    row = (await session.execute(statement, parameters)).mappings().first()
    if row is None:
        return None
    slot = _slot(row)
    return replace(slot, bookmark=Bookmark.from_row(row)) if row.get("client_bookmark_id") is not None else slot


def _slot(row: Mapping[str, Any]) -> StreamSlot:
    pending = row["pending"]
    return StreamSlot(row["last_position"], bool(row["is_pro"]), dict(pending) if pending else None)


_CLIENT_ID = bindparam("client_bookmark_id", type_=bookmarks.c.client_bookmark_id.type)
_SEEN = bindparam("seen_updated_at", type_=bookmarks.c.updated_at.type)


def _of_the_bookmark(table: Table) -> ColumnElement[bool]:
    return and_(table.c.owner_uid == _OWNER, table.c.client_bookmark_id == _CLIENT_ID)


@dataclass(frozen=True, slots=True)
class HeadWrite:
    """What :func:`create_at_head` did and saw. ``position``: the new bookmark's, when it stored one.
    Otherwise ``existing``: the bookmark as the statement's snapshot holds it, not locked (None: no row,
    or one another write committed since the snapshot); ``live``: the user is not deleted."""

    position: datetime | None
    is_pro: bool
    live: bool
    existing: Bookmark | None


class _PositionedWrite(NamedTuple):
    alloc: CTE
    saved: CTE
    written: CTE

    def position(self) -> Select[Any]:
        """The position, when the record was stored (else no row)."""
        return select(self.alloc.c.last_position).select_from(self.alloc.join(self.saved, true()))


def _positioned_write(
    positioned: tuple[str, ...], *conditions: ColumnElement[bool], where: ColumnElement[bool] | None = None
) -> _PositionedWrite:
    """Take the user's next position only if ``conditions`` hold (``alloc``), store the record with the
    columns ``positioned`` set to that position (``saved``: :func:`put_statement`'s parameters; a create
    without ``where``, else the conflict's update only ``where`` it holds), and its outbox row with the
    event's ``updatedAt`` set to the stored one (``written``: :func:`_with_event`'s parameters)."""
    alloc = _position_upsert(*conditions).cte("alloc")
    values = put_values(tombstone=False) | dict.fromkeys(positioned, alloc.c.last_position)
    upsert = rows.put_from(values, alloc, create=where is None, where=where)
    saved = upsert.returning(bookmarks.c.updated_at).cte("saved")
    stored_time = func.to_jsonb(event_time(saved.c.updated_at))
    payload = func.jsonb_set(_EVENT_PAYLOAD, literal(["updatedAt"], ARRAY(Text())), stored_time)
    return _PositionedWrite(alloc, saved, _outbox_rows(saved, payload).cte("written"))


def event_time(column: ColumnElement[datetime]) -> ColumnElement[str]:
    """A ``timestamptz`` as an event's JSON writes a UTC time (pydantic's form): whole seconds without a
    fraction, otherwise six digits, and ``Z``."""
    utc = func.timezone("UTC", column)
    whole = func.to_char(utc, 'YYYY-MM-DD"T"HH24:MI:SS')
    fraction = case((func.date_trunc("second", utc) == utc, ""), else_=func.to_char(utc, ".US"))
    return whole.op("||")(fraction).op("||")(literal("Z"))


@functools.cache
def _create_statement(positioned: tuple[str, ...]) -> Select[Any]:
    """:func:`create_at_head`'s statement, built once per ``positioned``. The position is taken only if
    the bookmark does not exist and no early enrichment result waits for it. A row another write committed
    since the statement began is not replaced (``ON CONFLICT DO NOTHING``): nothing is stored, and the
    position taken stays unused, a gap the stream allows. Beside what it stored, the statement reads the
    bookmark as its snapshot holds it, the Pro flag and whether the user is deleted."""
    absent = [~exists().where(_of_the_bookmark(t)) for t in (bookmarks, pending_enrichments)]
    write = _positioned_write(positioned, *absent)
    existing = select(*BOOKMARK_COLUMNS).where(_of_the_bookmark(bookmarks)).cte("existing")
    is_pro = select(user_streams.c.is_pro).where(user_streams.c.owner_uid == _OWNER).scalar_subquery()
    one = select(literal(1).label("one")).subquery("one")
    return (
        select(
            write.position().scalar_subquery().label("position"),
            func.coalesce(is_pro, false()).label("is_pro"),
            (~exists().where(deleted_users.c.owner_uid == _OWNER)).label("live"),
            *existing.c,
        )
        .select_from(one.outerjoin(existing, true()))
        .add_cte(write.written)
    )


async def create_at_head(
    conn: AsyncConnection, bookmark: Bookmark, event: Event, positioned: tuple[str, ...]
) -> HeadWrite:
    """Store a new bookmark and its outbox row, taking the user's next position, in one statement: on a
    session in autocommit (:func:`common.db.single_statements`) the whole unit of work is one round trip.
    ``bookmark`` and ``event`` are drafts: the statement sets the fields ``positioned`` and the event's
    ``updatedAt`` to the position it takes. When it stores nothing (see :func:`_create_statement`) the
    answer says why, with the bookmark as it exists."""
    row = (await conn.execute(_create_statement(positioned), _head_parameters(bookmark, event))).mappings().one()
    existing = Bookmark.from_row(row) if row["client_bookmark_id"] is not None else None
    return HeadWrite(row["position"], bool(row["is_pro"]), bool(row["live"]), existing)


def _head_parameters(bookmark: Bookmark, event: Event) -> dict[str, Any]:
    """The values :func:`_positioned_write`'s statements bind: the draft's row, its event, the owner."""
    return put_parameters(bookmark) | _event_parameters(event) | {"owner": bookmark.owner_uid}


@functools.cache
def _merge_statement(positioned: tuple[str, ...]) -> Select[Any]:
    """:func:`merge_at_head`'s statement, built once per ``positioned``: the position is taken only if the
    bookmark's stored ``updated_at`` is still ``seen_updated_at``, and the row is replaced only if it
    still is when the upsert locks it."""
    unchanged = bookmarks.c.updated_at == _SEEN
    write = _positioned_write(positioned, exists().where(_of_the_bookmark(bookmarks), unchanged), where=unchanged)
    return write.position().add_cte(write.written)


async def merge_at_head(
    conn: AsyncConnection, bookmark: Bookmark, event: Event, positioned: tuple[str, ...], seen: datetime
) -> datetime | None:
    """Replace a bookmark read without a lock by ``bookmark`` (a draft as in :func:`create_at_head`) and
    write its outbox row in one statement, unless another write changed it since it was read (its
    ``updated_at`` is no longer ``seen``): optimistic, where the locked way takes two statements in a
    transaction. The position, or None when nothing was stored."""
    parameters = _head_parameters(bookmark, event) | {"seen_updated_at": seen}
    stored = (await conn.execute(_merge_statement(positioned), parameters)).first()
    return stored[0] if stored is not None else None


def _upsert_statement(table: Table, values: dict[str, Any]) -> Insert:
    keys = [c.name for c in table.primary_key.columns]
    statement = insert(table).values(values)
    return statement.on_conflict_do_update(
        index_elements=keys, set_={k: statement.excluded[k] for k in values if k not in keys}
    )


_EVENT_PAYLOAD = cast(bindparam("event_payload", type_=Text()), JSONB)


def _with_event(upsert: Insert, table: Table) -> ReturningInsert[Any]:
    """``upsert`` (one row of ``table``) and its outbox row in one statement (a data-modifying CTE): one
    round trip, same transaction. The event is bound: ``event_topic``, ``event_key``, ``event_payload``,
    ``event_headers``. It returns the outbox row's id, or nothing when the upsert stored nothing (an
    ``ON CONFLICT DO NOTHING`` that met a row), and then no event is written either."""
    return _outbox_rows(upsert.returning(table.c.owner_uid).cte("saved"))


def _outbox_rows(saved: CTE, payload: ColumnElement[Any] = _EVENT_PAYLOAD) -> ReturningInsert[Any]:
    """The bound event's outbox row (:func:`_with_event`) for each row ``saved`` returned, with ``payload``
    (the bound one, or an expression of it)."""
    row = select(
        bindparam("event_topic", type_=Text()),
        bindparam("event_key", type_=Text()),
        payload,
        cast(bindparam("event_headers", type_=Text()), JSONB),
    ).select_from(saved)
    columns = [outbox.c.topic, outbox.c.key, outbox.c.payload, outbox.c.headers]
    return insert(outbox).from_select(columns, row).returning(outbox.c.id)


def _event_parameters(event: Event) -> dict[str, Any]:
    return {"event_topic": event.topic, "event_key": event.key, "event_payload": event.model_dump_json(),
            "event_headers": json.dumps(current_trace_headers())}  # fmt: skip


@functools.cache
def _put_statement(tombstone: bool, create: bool, with_event: bool, also: TombstoneCtes | None) -> Any:
    """:func:`put_bookmark`'s statement without page text, built once. ``also``: CTEs a tombstone's
    statement carries (the bookmark's highlights deleted with it, one statement still)."""
    statement = put_statement(tombstone, only_if_absent=create)
    if with_event:
        statement = _with_event(statement, bookmarks)
    elif create:  # whether it stored anything
        statement = statement.returning(bookmarks.c.owner_uid)
    if tombstone and also is not None:
        statement = statement.add_cte(*also())
    return statement


async def put_bookmark(
    session: AsyncSession,
    bookmark: Bookmark,
    page: PageText | None = None,
    *,
    event: Event | None = None,
    create: bool = False,
    tombstone_ctes: TombstoneCtes | None = None,
) -> bool:
    """Store the record as it is (insert or replace every column) and its search index, with the page
    text when enrichment brought one, and with ``event`` its outbox row: one statement, one round trip
    (two when the page is in a language the user's library has not had before). Without page text the
    statement is one built once per shape (SQLAlchemy's compiled cache keeps it); with it, it carries the
    page's values.

    ``create``: the write found no such bookmark, and stores one only if none exists. One committed since
    the statement that found none began is not replaced: nothing is stored and the answer is False (see
    :func:`open_stream`). ``tombstone_ctes``: what a tombstone's statement also does (a cached function:
    it keys the statement built once). True when the record was stored."""
    events = _event_parameters(event) if event is not None else {}
    if page is None:
        statement = _put_statement(bookmark.deleted_at is not None, create, event is not None, tombstone_ctes)
        result = await session.execute(statement, put_parameters(bookmark) | events)
        # An upsert without RETURNING always stores; a create or one with its event returns what it stored.
        return True if event is None and not create else result.first() is not None
    statement = page_statement(bookmark, page, only_if_absent=create)
    if event is not None:
        stored = bool((await session.execute(_with_event(statement, bookmarks), events)).first())
    elif create:
        stored = bool((await session.execute(statement.returning(bookmarks.c.owner_uid))).first())
    else:
        await session.execute(statement)
        stored = True
    if stored:  # the page's language joins the user's
        await remember_search_config(session, bookmark.owner_uid, rows.index().page_config(page))
    return stored


async def put_collection_with_event(session: AsyncSession, collection: Collection, event: Event) -> None:
    statement = _with_event(_upsert_statement(collections, collection.to_row()), collections)
    await session.execute(statement, _event_parameters(event))


async def is_user_deleted(session: AsyncSession, owner: uuid.UUID) -> bool:
    found = await session.execute(select(literal(1)).where(deleted_users.c.owner_uid == owner))
    return found.first() is not None


async def _upsert(session: AsyncSession, table: Table, values: dict[str, Any]) -> None:
    await session.execute(_upsert_statement(table, values))


# --- bookmarks ----------------------------------------------------------------------------------------


_GET_FOR_UPDATE = (
    select(*BOOKMARK_COLUMNS)
    .where(bookmarks.c.owner_uid == _OWNER, bookmarks.c.client_bookmark_id == bindparam("client_bookmark_id"))
    .with_for_update()
)


async def get_for_update(session: AsyncSession, owner: uuid.UUID, client_bookmark_id: str) -> Bookmark | None:
    parameters = {"owner": owner, "client_bookmark_id": client_bookmark_id}
    row = (await session.execute(_GET_FOR_UPDATE, parameters)).mappings().first()
    return Bookmark.from_row(row) if row is not None else None


_CONFIG = bindparam("config", type_=Text())
_ADD_SEARCH_CONFIG = (
    update(user_streams)
    .where(user_streams.c.owner_uid == _OWNER, ~user_streams.c.search_configs.any(_CONFIG))
    .values(search_configs=func.array_append(user_streams.c.search_configs, _CONFIG))
)


async def remember_search_config(session: AsyncSession, owner: uuid.UUID, config: str | None) -> None:
    """Add ``config`` to the owner's ``search_configs`` (no-op for None or one already there). The
    stream row is already locked by this write's position (rule 3), so concurrent writes cannot lose it."""
    if config is not None:
        await session.execute(_ADD_SEARCH_CONFIG, {"owner": owner, "config": config})


async def merge_search_configs(session: AsyncSession, source: uuid.UUID, target: uuid.UUID) -> None:
    """The target's ``search_configs`` gain the source's: its bookmarks' page languages move with them."""
    source_configs = select(user_streams.c.search_configs).where(user_streams.c.owner_uid == source)
    both = func.array_cat(user_streams.c.search_configs, source_configs.scalar_subquery())
    configs = func.unnest(both).table_valued("config").render_derived(name="configs")
    union = select(func.array_agg(distinct(configs.c.config))).scalar_subquery()
    statement = (
        update(user_streams)
        .where(user_streams.c.owner_uid == target)
        .values(search_configs=func.coalesce(union, user_streams.c.search_configs))
    )
    await session.execute(statement)


async def copy_search_page(
    session: AsyncSession, source: uuid.UUID, target: uuid.UUID, client_bookmark_id: str
) -> None:
    """A merged bookmark keeps its page text: copy the source row's search columns onto the moved one."""
    src = bookmarks.alias("src")
    names = ("search_vector", "search_head", "search_config", "search_page_text", "search_page_vector",
             "search_highlight_texts", "search_highlight_vector")  # fmt: skip
    statement = (
        update(bookmarks)
        .values({name: src.c[name] for name in names})
        .where(
            src.c.owner_uid == source,
            src.c.client_bookmark_id == bookmarks.c.client_bookmark_id,
            bookmarks.c.owner_uid == target,
            bookmarks.c.client_bookmark_id == client_bookmark_id,
        )
    )
    await session.execute(statement)


async def put_bookmarks(session: AsyncSession, records: Sequence[Bookmark]) -> None:
    """:func:`put_bookmark` of many records without page text (an import batch), set-based: per 1,000
    records and shape (live or tombstone), one ``INSERT … SELECT`` of those that do not exist yet and one
    ``UPDATE`` of the others (the upsert's conflict branch), instead of an upsert per record. A record
    listed twice is written once, as its last listing."""
    unique = list({(r.owner_uid, r.client_bookmark_id): r for r in records}.values())
    for tombstone in (False, True):
        shaped = [r for r in unique if (r.deleted_at is not None) == tombstone]
        for start in range(0, len(shaped), _UPDATE_BATCH):
            chunk = shaped[start : start + _UPDATE_BATCH]
            result = await session.execute(rows.insert_many_statement(tombstone), {"rows": rows.many_rows(chunk)})
            inserted = {(r.owner_uid, r.client_bookmark_id) for r in result}
            existing = [r for r in chunk if (r.owner_uid, r.client_bookmark_id) not in inserted]
            if existing:
                await session.execute(rows.update_many_statement(tombstone), {"rows": rows.many_rows(existing)})


# Each statement stays far below the statement deadline (2 s) on a loaded machine: 2,000 rows with the
# wire-document trigger and the search columns once ran past it beside the e2e suite.
_UPDATE_BATCH = 1000


async def update_bookmarks(session: AsyncSession, records: Sequence[Bookmark]) -> None:
    """Replace existing records and their search index, set-based: one statement per 1,000 records and
    shape (live or tombstone), where :func:`put_bookmarks` runs its upsert once per record. Every record
    must exist (a bulk change, its undo, a restore, a merge, a purge)."""
    for tombstone in (False, True):
        shaped = [r for r in records if (r.deleted_at is not None) == tombstone]
        for start in range(0, len(shaped), _UPDATE_BATCH):
            batch = rows.many_rows(shaped[start : start + _UPDATE_BATCH])
            await session.execute(rows.update_many_statement(tombstone), {"rows": batch})


async def _select_bookmarks(session: AsyncSession, *where: Any) -> list[Bookmark]:
    statement = (
        select(*BOOKMARK_COLUMNS)
        .where(*where)
        .order_by(bookmarks.c.updated_at, bookmarks.c.client_bookmark_id)
        .with_for_update()
    )
    return [Bookmark.from_row(r) for r in (await session.execute(statement)).mappings()]


async def with_save_why(session: AsyncSession, owner: uuid.UUID) -> list[Bookmark]:
    return await _select_bookmarks(
        session, bookmarks.c.owner_uid == owner, bookmarks.c.save_why.is_not(None), bookmarks.c.deleted_at.is_(None)
    )


async def in_collection(session: AsyncSession, owner: uuid.UUID, collection_id: str) -> list[Bookmark]:
    """Every bookmark (tombstones too) whose ``collection_ids`` name ``collection_id``."""
    return await _select_bookmarks(
        session, bookmarks.c.owner_uid == owner, bookmarks.c.collection_ids.any(collection_id)
    )


async def all_for_owner(session: AsyncSession, owner: uuid.UUID) -> list[Bookmark]:
    return await _select_bookmarks(session, bookmarks.c.owner_uid == owner)


# --- collections --------------------------------------------------------------------------------------


async def get_collection_for_update(session: AsyncSession, owner: uuid.UUID, collection_id: str) -> Collection | None:
    statement = (
        select(collections)
        .where(collections.c.owner_uid == owner, collections.c.collection_id == collection_id)
        .with_for_update()
    )
    row = (await session.execute(statement)).mappings().first()
    return Collection.from_row(row) if row is not None else None


async def live_collection_parents(session: AsyncSession, owner: uuid.UUID) -> dict[str, str | None]:
    """Every live collection of the user → its parent id (the tree the nesting rules check)."""
    statement = select(collections.c.collection_id, collections.c.parent_id).where(
        collections.c.owner_uid == owner, collections.c.deleted_at.is_(None)
    )
    return {r.collection_id: r.parent_id for r in await session.execute(statement)}


async def _select_collections(session: AsyncSession, *where: Any) -> list[Collection]:
    statement = (
        select(collections)
        .where(*where)
        .order_by(collections.c.updated_at, collections.c.collection_id)
        .with_for_update()
    )
    return [Collection.from_row(r) for r in (await session.execute(statement)).mappings()]


async def children_of(session: AsyncSession, owner: uuid.UUID, collection_id: str) -> list[Collection]:
    return await _select_collections(
        session,
        collections.c.owner_uid == owner,
        collections.c.parent_id == collection_id,
        collections.c.deleted_at.is_(None),
    )


async def all_collections_for_owner(session: AsyncSession, owner: uuid.UUID) -> list[Collection]:
    return await _select_collections(session, collections.c.owner_uid == owner)


async def put_collection(session: AsyncSession, collection: Collection) -> None:
    await _upsert(session, collections, collection.to_row())


# --- users --------------------------------------------------------------------------------------------


async def set_pro(session: AsyncSession, owner: uuid.UUID, is_pro: bool) -> bool:
    """Record the plan; return True when it changed."""
    prev = select(user_streams.c.is_pro).where(user_streams.c.owner_uid == owner).with_for_update().cte("prev")
    statement = (
        insert(user_streams)
        .values(owner_uid=owner, last_position=func.clock_timestamp(), is_pro=is_pro)
        .on_conflict_do_update(index_elements=[user_streams.c.owner_uid], set_={"is_pro": is_pro})
        .returning(select(prev.c.is_pro).scalar_subquery().label("previous"))
        .add_cte(prev)
    )
    previous = (await session.execute(statement)).one().previous
    if previous is None:  # first time we hear of this user: only an upgrade changes what devices see
        return is_pro
    return bool(previous != is_pro)


async def purge_user(session: AsyncSession, owner: uuid.UUID) -> None:
    """The store's rows of the user; each feature's own tables are purged by its store (service.purge_user)."""
    for table in (bookmarks, collections, pending_enrichments, user_streams, bulk_operations, merges):
        await session.execute(delete(table).where(table.c.owner_uid == owner))
    await session.execute(insert(deleted_users).values(owner_uid=owner, deleted_at=func.now()).on_conflict_do_nothing())
    await forget_published_events(session, key=str(owner))


# --- enrichment results that arrived before their bookmark --------------------------------------------


async def save_pending_enrichment(
    session: AsyncSession, owner: uuid.UUID, client_bookmark_id: str, normalized_url: str, event: dict[str, Any]
) -> None:
    statement = insert(pending_enrichments).values(
        owner_uid=owner, client_bookmark_id=client_bookmark_id, normalized_url=normalized_url, event=event
    )
    statement = statement.on_conflict_do_update(
        index_elements=[pending_enrichments.c.owner_uid, pending_enrichments.c.client_bookmark_id],
        set_={
            "normalized_url": statement.excluded.normalized_url,
            "event": statement.excluded.event,
            "received_at": func.now(),
        },
    )
    await session.execute(statement)


async def take_pending_enrichment(
    session: AsyncSession, owner: uuid.UUID, client_bookmark_id: str
) -> dict[str, Any] | None:
    statement = (
        delete(pending_enrichments)
        .where(
            pending_enrichments.c.owner_uid == owner,
            pending_enrichments.c.client_bookmark_id == client_bookmark_id,
        )
        .returning(pending_enrichments.c.event)
    )
    row = (await session.execute(statement)).first()
    return dict(row.event) if row is not None else None
