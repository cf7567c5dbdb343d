"""Async engine and sessions (SQLAlchemy on asyncpg). One engine per process, built in the lifespan."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from types import TracebackType
from typing import Any, ClassVar, Self

from sqlalchemy import event, text
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry

from common.settings import DEFAULT_DB_CONCURRENCY

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


# Whether this task (or the task that created it) already holds a permit of the gate below.
_HOLDING: ContextVar[bool] = ContextVar("holding_database_permit", default=False)


class _GatedSession(AsyncSession):
    """A session that takes a permit of its factory's gate for as long as it is open (``async with``).

    The gate is a first-come, first-served queue in front of the database: at most ``gate``'s size units of
    work are in PostgreSQL at once, and the others wait in arrival order. Without it, every request of a
    burst held a backend (up to the pool's size plus overflow), the backends fought over two cores and the
    WAL lock, and the pool handed a returned connection to whichever request asked first, not to the one
    waiting longest: at 64 concurrent writes, the slowest 1 % took three times the median (issue 15).
    A session opened while one is already held (nested, or in a task started from one) takes no second
    permit, so nesting cannot deadlock."""

    gate: ClassVar[asyncio.Semaphore]  # set per factory by create_session_factory
    _gated: bool = False

    async def __aenter__(self) -> Self:
        if not _HOLDING.get():
            await self.gate.acquire()
            self._gated, self._token = True, _HOLDING.set(True)
        return await super().__aenter__()

    async def __aexit__(
        self, type_: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        try:
            await super().__aexit__(type_, value, traceback)
        finally:
            if self._gated:
                self._gated = False
                _HOLDING.reset(self._token)
                self.gate.release()


def create_session_factory(engine: AsyncEngine, *, concurrency: int = DEFAULT_DB_CONCURRENCY) -> SessionFactory:
    """Sessions on ``engine``, at most ``concurrency`` open at once (``async with``); the rest queue in
    arrival order. A session used without ``async with`` (an export's long snapshot) takes no permit."""
    gated = type("GatedSession", (_GatedSession,), {"gate": asyncio.Semaphore(concurrency)})
    return async_sessionmaker(engine, class_=gated, expire_on_commit=False)


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
