"""The lean write path (issue 15): every bookmark write is three statements in one transaction (open the
stream, read the row under lock, store it with its outbox row), and nothing of the guarantees goes."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import event, func, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from bookmarks import service
from bookmarks.domain.errors import UserGone
from bookmarks.store.tables import bookmarks, deleted_users, pending_enrichments, user_streams
from common.db import SessionFactory, create_engine, create_session_factory
from common.events import EnrichmentCompleted
from common.tables import OutboxRow

outbox = OutboxRow.__table__  # type: ignore[attr-defined]


class Counted:
    """Every statement the engine's connections send to PostgreSQL, whether through a session or on the
    asyncpg connection itself (a driver transaction), transaction control (BEGIN, COMMIT) apart."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.statements: list[str] = []
        event.listen(engine.sync_engine, "connect", self._watch)

    def _watch(self, connection: Any, _: Any) -> None:
        connection.driver_connection.add_query_logger(self._seen)

    def _seen(self, logged: Any) -> None:
        statement: str = logged.query
        if statement.strip().rstrip(";").upper() not in ("BEGIN", "COMMIT", "ROLLBACK"):
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


async def test_create_update_and_delete_are_three_statements_each(engine: AsyncEngine) -> None:
    sessions, owner = create_session_factory(engine), uuid.uuid4()
    counted = Counted(engine)
    await _put(sessions, owner, "b1", title="first")
    assert len(counted.take()) == 3
    await _put(sessions, owner, "b1", title="second")
    assert len(counted.take()) == 3
    await _put(sessions, owner, "b1", title="second")  # a retry: nothing to store
    assert len(counted.take()) == 2
    await service.delete_bookmark(sessions=sessions, owner=owner, client_bookmark_id="b1")
    assert len(counted.take()) == 3
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
    completed = EnrichmentCompleted.model_validate({
        "userId": str(owner), "clientBookmarkId": "b1", "normalizedUrl": "https://example.com/a",
        "enrichedAt": "2026-11-23T12:00:00Z",
        "result": {"normalizedUrl": "https://example.com/a", "domain": "example.com", "title": "From the page",
                   "tags": ["x"]},
    })
    async with engine.begin() as conn:
        await conn.execute(insert(pending_enrichments).values(
            owner_uid=owner, client_bookmark_id="b1", normalized_url="https://example.com/a",
            event=completed.model_dump(mode="json"),
        ))
    # Deleting another id leaves it; creating b1 applies and removes it.
    await service.delete_bookmark(sessions=sessions, owner=owner, client_bookmark_id="other")
    view = await _put(sessions, owner, "b1")
    assert view.record.title == "From the page" and view.record.enrichment_status == "completed"
    async with engine.connect() as conn:
        left = await conn.execute(select(pending_enrichments).where(pending_enrichments.c.owner_uid == owner))
        assert left.first() is None
