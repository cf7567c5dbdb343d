"""The lean write path: every bookmark write is two statements in one transaction (open the
stream reading the row under lock, store it with its outbox row), and nothing of the guarantees goes."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from sqlalchemy import event, func, insert, select
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
    """Every statement the engine's connections send to PostgreSQL through SQLAlchemy (every statement of
    the service does), transaction control (BEGIN, COMMIT) apart: SQLAlchemy sends that past its cursor."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.statements: list[str] = []
        event.listen(engine.sync_engine, "before_cursor_execute", self._seen)

    def _seen(self, _connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        self.statements.append(statement)

    def take(self) -> list[str]:
        taken, self.statements = self.statements, []
        return taken


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


async def test_create_update_and_delete_are_two_statements_each(engine: AsyncEngine) -> None:
    sessions, owner = create_session_factory(engine), uuid.uuid4()
    counted = Counted(engine)
    await _put(sessions, owner, "b1", title="first")
    assert len(counted.take()) == 2
    await _put(sessions, owner, "b1", title="second")
    assert len(counted.take()) == 2
    await _put(sessions, owner, "b1", title="second")  # a retry: nothing to store
    assert len(counted.take()) == 1
    await service.delete_bookmark(sessions=sessions, owner=owner, client_bookmark_id="b1")
    assert len(counted.take()) == 2
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
async def _holding_a_create(url: str, owner: uuid.UUID, bid: str, **fields: Any) -> AsyncIterator[asyncio.Event]:
    """Another device's create of ``bid``, stored but not committed yet: its unit of work (on an engine
    and gate of its own) holds the user's stream row until the yielded event is set, then commits."""
    engine = create_engine(url, pool_size=1, max_overflow=0)
    stored, commit = asyncio.Event(), asyncio.Event()

    async def create() -> None:
        async with transaction(create_session_factory(engine)) as session:
            slot = await repository.open_stream(session, owner, bid, take_pending=True)
            assert slot is not None and slot.bookmark is None
            record = rules.new_bookmark(owner, bid, _write("https://example.com/a", **fields), slot.position)
            created = service._saved_event(record, created=True)
            assert await repository.put_bookmark(session, record, event=created, create=True)
            stored.set()
            await commit.wait()

    task = asyncio.create_task(create())
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
    async with _holding_a_create(bookmarks_settings.database_url, owner, "b1", title="first", notes="kept") as commit:
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
