"""The lean write path: a PUT is one statement to create and two to update, each committed on its own
(decision 0158); other writes, and a PUT that met another write, are two statements in one transaction
(open the stream reading the row under lock, store it with its outbox row). No guarantee goes."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest
from pydantic import TypeAdapter
from sqlalchemy import DateTime, event, func, insert, literal, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from bookmarks import service
from bookmarks.domain import model as rules
from bookmarks.domain.errors import UserGone
from bookmarks.store import repository
from bookmarks.store.tables import bookmarks, deleted_users, pending_enrichments, user_streams
from common.db import SessionFactory, asyncpg_dsn, create_engine, create_session_factory, transaction
from common.events import EnrichmentCompleted
from common.tables import OutboxRow
from devstack.testing import eventually

outbox = OutboxRow.__table__  # type: ignore[attr-defined]


class Counted:
    """Every round trip the engine's one pooled connection makes: the statements SQLAlchemy sends (every
    statement of the service) and the transaction control (BEGIN, COMMIT) its asyncpg adapter sends past
    its cursor, seen by asyncpg's query logger."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine, self.statements = engine, list[str]()
        event.listen(engine.sync_engine, "before_cursor_execute", self._seen)

    async def __aenter__(self) -> Counted:
        async with self.engine.connect() as conn:
            driver = (await conn.get_raw_connection()).driver_connection
            assert isinstance(driver, asyncpg.Connection)
            driver.add_query_logger(lambda logged: self.statements.append(logged.query))
        self.statements.clear()
        return self

    async def __aexit__(self, *_: object) -> None:
        event.remove(self.engine.sync_engine, "before_cursor_execute", self._seen)

    def _seen(self, _connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        self.statements.append(statement)

    def take(self) -> list[str]:
        taken, self.statements = self.statements, []
        return [" ".join(s.split()[:2]) for s in taken]


@pytest.fixture
async def engine(bookmarks_app: Any, bookmarks_settings: Any) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(bookmarks_settings.database_url, pool_size=1, max_overflow=0)
    yield engine
    await engine.dispose()


def _write(url: str, **fields: Any) -> Any:
    return service.client_write({"url": url, **fields})


async def _put(sessions: SessionFactory, owner: uuid.UUID, bid: str, **fields: Any) -> Any:
    return await service.upsert_bookmark(
        sessions=sessions, owner=owner, client_bookmark_id=bid, write=_write("https://example.com/a", **fields)
    )


async def _outbox_rows(engine: AsyncEngine, owner: uuid.UUID) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(select(func.count()).where(outbox.c.key == str(owner)))).scalar_one())


async def test_a_put_is_one_round_trip_to_create_and_two_to_update(engine: AsyncEngine) -> None:
    """A new bookmark is one statement committed on its own, an update its read and its conditional
    replace, a retry the read alone: no BEGIN or COMMIT. A delete is the locked way's unit of work."""
    sessions, owner = create_session_factory(engine), uuid.uuid4()
    async with Counted(engine) as counted:
        await _put(sessions, owner, "b1", title="first")
        assert counted.take() == ["WITH alloc"]
        await _put(sessions, owner, "b1", title="second")
        assert counted.take() == ["WITH alloc", "WITH alloc"]
        await _put(sessions, owner, "b1", title="second")  # a retry: nothing to store
        assert counted.take() == ["WITH alloc"]
        await service.delete_bookmark(sessions=sessions, owner=owner, client_bookmark_id="b1")
        taken = counted.take()  # a statement is seen as it is sent, BEGIN once its answer came: any order
        assert sorted(taken) == ["BEGIN ISOLATION", "COMMIT;", "WITH alloc", "WITH live_marks"]
    assert await _outbox_rows(engine, owner) == 3  # created, updated, deleted: one event each


async def test_a_deleted_user_gets_no_position_and_no_event(engine: AsyncEngine) -> None:
    sessions, owner = create_session_factory(engine), uuid.uuid4()
    async with engine.begin() as conn:
        await conn.execute(insert(deleted_users).values(owner_uid=owner, deleted_at=func.now()))
    with pytest.raises(UserGone):
        await _put(sessions, owner, "b1")
    with pytest.raises(UserGone):
        await service.delete_bookmark(sessions=sessions, owner=owner, client_bookmark_id="b1")
    async with engine.connect() as conn:
        assert (await conn.execute(select(user_streams).where(user_streams.c.owner_uid == owner))).first() is None
        assert (await conn.execute(select(bookmarks).where(bookmarks.c.owner_uid == owner))).first() is None
    assert await _outbox_rows(engine, owner) == 0


async def test_a_pending_enrichment_is_taken_by_the_create_only(engine: AsyncEngine) -> None:
    sessions, owner = create_session_factory(engine), uuid.uuid4()
    completed = EnrichmentCompleted.model_validate(
        {
            "userId": str(owner),
            "clientBookmarkId": "b1",
            "normalizedUrl": "https://example.com/a",
            "enrichedAt": "2026-11-23T12:00:00Z",
            "result": {
                "normalizedUrl": "https://example.com/a",
                "domain": "example.com",
                "title": "From the page",
                "tags": ["x"],
            },
        }
    )
    async with engine.begin() as conn:
        await conn.execute(
            insert(pending_enrichments).values(
                owner_uid=owner,
                client_bookmark_id="b1",
                normalized_url="https://example.com/a",
                event=completed.model_dump(mode="json"),
            )
        )
    # Deleting another id leaves it; creating b1 applies and removes it.
    await service.delete_bookmark(sessions=sessions, owner=owner, client_bookmark_id="other")
    view = await _put(sessions, owner, "b1")
    assert view.record.title == "From the page" and view.record.enrichment_status == "completed"
    async with engine.connect() as conn:
        left = await conn.execute(select(pending_enrichments).where(pending_enrichments.c.owner_uid == owner))
        assert left.first() is None


@contextlib.asynccontextmanager
async def _holding_a_write(url: str, owner: uuid.UUID, bid: str, **fields: Any) -> AsyncIterator[asyncio.Event]:
    """Another device's write of ``bid`` (a create, or a merge if it exists), stored but not committed yet:
    its unit of work (the locked way, on an engine and gate of its own) holds the user's stream row until
    the yielded event is set, then commits."""
    engine = create_engine(url, pool_size=1, max_overflow=0)
    stored, commit = asyncio.Event(), asyncio.Event()

    async def write() -> None:
        async with transaction(create_session_factory(engine)) as session:
            slot = await repository.open_stream(session, owner, bid, take_pending=True)
            assert slot is not None
            sent = _write("https://example.com/a", **fields)
            if slot.bookmark is None:
                record = rules.new_bookmark(owner, bid, sent, slot.position)
                event = service._saved_event(record, created=True)
                assert await repository.put_bookmark(session, record, event=event, create=True)
            else:
                merged = rules.merge_write(slot.bookmark, sent, slot.position)
                assert merged is not None
                await repository.put_bookmark(session, merged, event=service._saved_event(merged))
            stored.set()
            await commit.wait()

    task = asyncio.create_task(write())
    try:
        await asyncio.wait_for(stored.wait(), timeout=10)
        yield commit
        await task
    finally:
        task.cancel()
        await engine.dispose()


async def _waiting_for_a_lock(dsn: str) -> bool:
    conn = await asyncpg.connect(dsn)
    try:
        waiting = await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
    finally:
        await conn.close()
    return bool(waiting)


@pytest.mark.parametrize("second", ["put", "delete"])
async def test_a_write_that_waited_for_a_create_of_the_same_bookmark_sees_it(
    engine: AsyncEngine, bookmarks_settings: Any, second: str
) -> None:
    """Two devices write the same new bookmark at once. The second write's opening statement waits for the
    stream row the first holds, and its snapshot is older than the first's commit, so it does not see the
    new row. Its store must not replace that row: it reads it again and merges (a PUT keeps the fields it
    does not send) or deletes it (a DELETE)."""
    sessions, owner = create_session_factory(engine), uuid.uuid4()
    dsn = asyncpg_dsn(bookmarks_settings.database_url)
    await _put(sessions, owner, "other")  # the user's stream exists
    async with _holding_a_write(bookmarks_settings.database_url, owner, "b1", title="first", notes="kept") as commit:
        if second == "put":
            task = asyncio.create_task(_put(sessions, owner, "b1", title="second"))
        else:
            task = asyncio.create_task(service.delete_bookmark(sessions=sessions, owner=owner, client_bookmark_id="b1"))
        await eventually(lambda: _waiting_for_a_lock(dsn), timeout=10)
        commit.set()
    await task
    async with engine.connect() as conn:
        row = (await conn.execute(select(bookmarks).where(bookmarks.c.owner_uid == owner,
                                                          bookmarks.c.client_bookmark_id == "b1"))).one()  # fmt: skip
        events = (await conn.execute(select(outbox.c.payload).where(outbox.c.key == str(owner))
                                     .order_by(outbox.c.id))).scalars().all()  # fmt: skip
    if second == "put":
        assert (row.title, row.notes, row.deleted_at) == ("second", "kept", None)
        assert [e.get("created") for e in events[-2:]] == [True, False]  # one create, then a merge
    else:
        assert row.deleted_at is not None and row.notes == "kept"
        assert events[-1]["clientBookmarkId"] == "b1" and "deletedAt" in events[-1]


@pytest.mark.parametrize("with_event", [True, False])
async def test_a_create_that_meets_a_row_stores_nothing_with_or_without_its_event(
    engine: AsyncEngine, with_event: bool
) -> None:
    sessions, owner = create_session_factory(engine), uuid.uuid4()
    await _put(sessions, owner, "b1", title="first")
    before = await _outbox_rows(engine, owner)
    async with transaction(sessions) as session:
        slot = await repository.open_stream(session, owner)
        assert slot is not None
        record = rules.new_bookmark(owner, "b1", _write("https://example.com/a", title="second"), slot.position)
        event = service._saved_event(record, created=True) if with_event else None
        assert not await repository.put_bookmark(session, record, event=event, create=True)
        other = rules.new_bookmark(owner, "b2", _write("https://example.com/b"), slot.position)
        assert await repository.put_bookmark(session, other, create=True)
    async with engine.connect() as conn:
        titles = dict((await conn.execute(select(bookmarks.c.client_bookmark_id, bookmarks.c.title)
                                           .where(bookmarks.c.owner_uid == owner))).all())  # fmt: skip
    assert titles == {"b1": "first", "b2": None}
    assert await _outbox_rows(engine, owner) == before


async def test_an_update_that_meets_a_newer_write_merges_onto_it(engine: AsyncEngine, bookmarks_settings: Any) -> None:
    """A PUT of an existing bookmark reads it without a lock. Another device's update commits before the
    PUT replaces the row: the replace must not overwrite it. It stores nothing, and the locked way merges
    onto the newer row (a PUT keeps the fields it does not send)."""
    sessions, owner = create_session_factory(engine), uuid.uuid4()
    dsn = asyncpg_dsn(bookmarks_settings.database_url)
    await _put(sessions, owner, "b1", title="first")
    async with _holding_a_write(bookmarks_settings.database_url, owner, "b1", notes="kept") as commit:
        task = asyncio.create_task(_put(sessions, owner, "b1", title="second"))
        await eventually(lambda: _waiting_for_a_lock(dsn), timeout=10)
        commit.set()
    view = await task
    async with engine.connect() as conn:
        row = (await conn.execute(select(bookmarks).where(bookmarks.c.owner_uid == owner))).one()
        events = (await conn.execute(select(outbox.c.payload).where(outbox.c.key == str(owner))
                                     .order_by(outbox.c.id))).scalars().all()  # fmt: skip
    assert (row.title, row.notes) == (view.record.title, view.record.notes) == ("second", "kept")
    assert [(e["created"], e["updatedAt"]) for e in events] == [
        (True, events[0]["updatedAt"]),
        (False, events[1]["updatedAt"]),
        (False, _event_time(view.record.updated_at)),
    ]
    assert row.updated_at == view.record.updated_at


def _event_time(moment: datetime) -> str:
    return TypeAdapter(datetime).dump_python(moment, mode="json")  # type: ignore[no-any-return]


def _without_identity(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k not in ("eventId", "occurredAt")}


async def test_single_statement_writes_store_the_events_python_renders(engine: AsyncEngine) -> None:
    """The statements of a create and an update set the event's ``updatedAt`` to the position they take
    in SQL: every event equals the one Python renders of the record the PUT answered."""
    sessions, owner = create_session_factory(engine), uuid.uuid4()
    created = await _put(sessions, owner, "b1", title="first")
    moved = await service.upsert_bookmark(
        sessions=sessions, owner=owner, client_bookmark_id="b1", write=_write("https://example.com/b")
    )
    await service.delete_bookmark(sessions=sessions, owner=owner, client_bookmark_id="b1")
    revived = await _put(sessions, owner, "b1", user_tags=("back",))
    expected = [
        service._saved_event(created.record, created=True),
        service._saved_event(moved.record, url_changed=True),
        service._saved_event(revived.record, url_changed=True, revived=True),
    ]
    async with engine.connect() as conn:
        payloads = (await conn.execute(select(outbox.c.payload).where(outbox.c.key == str(owner))
                                       .order_by(outbox.c.id))).scalars().all()  # fmt: skip
    saved = [p for p in payloads if p["type"] == "bookmark.saved"]
    assert [_without_identity(p) for p in saved] == [_without_identity(e.model_dump(mode="json")) for e in expected]


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=UTC),
        datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 6, 1, 0, 0, 0, 1, tzinfo=UTC),
    ],
)
async def test_event_times_rendered_by_postgresql_are_pydantic_s(engine: AsyncEngine, moment: datetime) -> None:
    async with engine.connect() as conn:
        await conn.execute(text("SET TIME ZONE 'Europe/Paris'"))  # the session's zone plays no part
        rendered = (
            await conn.execute(select(repository.event_time(literal(moment, DateTime(timezone=True)))))
        ).scalar_one()
    assert rendered == _event_time(moment)
