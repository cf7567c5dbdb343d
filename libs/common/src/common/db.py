"""Async engine and sessions (SQLAlchemy on asyncpg). One engine per process, built in the lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry

SessionFactory = async_sessionmaker[AsyncSession]


def create_engine(url: str, *, pool_size: int = 20, max_overflow: int = 10) -> AsyncEngine:
    engine = create_async_engine(url, pool_size=pool_size, max_overflow=max_overflow, pool_recycle=1800)
    # A connection the server closed (a database restart) is detected by the pool, not by a user request.
    event.listen(engine.sync_engine, "checkout", _discard_if_closed)
    return engine


def _discard_if_closed(dbapi_connection: Any, record: ConnectionPoolEntry, proxy: Any) -> None:
    """Checkout check without a round trip. SQLAlchemy's ``pool_pre_ping`` on asyncpg costs three per
    checkout (BEGIN, a ping, ROLLBACK): 9 % of the bookmarks process's CPU per write, plus PostgreSQL's
    share. A restarting server closes its connections, and asyncpg marks a connection closed as soon as
    its socket does, idle in the pool or not; raising DisconnectionError makes the pool discard it and
    hand out a fresh one (docs/decisions-made.md, "Checkout without a ping")."""
    driver = record.driver_connection
    if driver is None or driver.is_closed():
        raise DisconnectionError("the server closed this pooled connection")


def create_session_factory(engine: AsyncEngine) -> SessionFactory:
    return async_sessionmaker(engine, expire_on_commit=False)


@asynccontextmanager
async def transaction(sessions: SessionFactory) -> AsyncIterator[AsyncSession]:
    """A unit of work: everything done with the session commits together or not at all."""
    async with sessions() as session, session.begin():
        yield session


def asyncpg_dsn(url: str) -> str:
    """The plain libpq DSN of a SQLAlchemy asyncpg URL (for LISTEN connections and tools)."""
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


async def database_ready(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))
