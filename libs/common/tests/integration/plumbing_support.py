"""What the event-plumbing tests (``test_plumbing``, ``test_outages``) share: a table of effects that a
consumer handler records once per event, the events themselves, and the outbox write."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import Column, Integer, MetaData, Table, Text, select
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from common.db import create_session_factory
from common.events import BookmarkSaved
from common.outbox import add_events

effects_metadata = MetaData()
effects = Table(
    "effects",
    effects_metadata,
    Column("event_id", UUID(as_uuid=True), nullable=False),
    Column("user_id", Text, nullable=False),
    Column("seq", Integer, nullable=False),
    Column("n", Integer, primary_key=True, autoincrement=True),
)


def saved(user: uuid.UUID, seq: int | str) -> BookmarkSaved:
    return BookmarkSaved(
        userId=user,
        clientBookmarkId=str(seq),
        url="https://e.example/",
        normalizedUrl="https://e.example/",
        domain="e.example",
        updatedAt=datetime.now(UTC),
    )


async def record_effect(session: AsyncSession, event: BookmarkSaved) -> None:
    """The handler's effect: one row per event, in the handler's transaction."""
    await session.execute(
        effects.insert().values(event_id=event.eventId, user_id=str(event.userId), seq=int(event.clientBookmarkId))
    )


async def effects_of(engine: AsyncEngine, user: uuid.UUID) -> list[tuple[uuid.UUID, int]]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(effects.c.event_id, effects.c.seq).where(effects.c.user_id == str(user)).order_by(effects.c.n)
        )
        return [(r.event_id, r.seq) for r in rows]


async def write_outbox(engine: AsyncEngine, events: list[BookmarkSaved]) -> None:
    async with create_session_factory(engine)() as session, session.begin():
        await add_events(session, events)
