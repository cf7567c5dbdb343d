"""Async engine and sessions (SQLAlchemy on asyncpg). One engine per process, built in the lifespan.

Every wait for the database has a client-side deadline (:class:`Deadlines`, docs/operations/
database-hangs.md): a server that stops answering without closing anything (stopped, partitioned, stuck
on its disk) makes a unit of work fail as an outage within seconds, and the connection it waited on is
discarded, never handed to the next unit in the middle of a statement.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar, Self

import asyncpg
from sqlalchemy import Engine, event, text
from sqlalchemy.engine import ExceptionContext
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry

from common.metrics import DB_DEADLINES_EXCEEDED, initialise_deadline_series
from common.outages import is_outage
from common.settings import (
    DEFAULT_DB_ACQUIRE_TIMEOUT,
    DEFAULT_DB_CONCURRENCY,
    DEFAULT_DB_CONNECT_TIMEOUT,
    DEFAULT_DB_STATEMENT_TIMEOUT,
    CommonSettings,
)

log = logging.getLogger("common.db")

SessionFactory = async_sessionmaker[AsyncSession]


@dataclass(frozen=True, slots=True)
class Deadlines:
    """How long a unit of work waits for the database, in seconds (``DB_*_TIMEOUT_SECONDS``).

    ``connect``: opening a connection (asyncpg's connect timeout; a stopped server still completes the TCP
    handshake in its kernel, then never answers the startup message). ``acquire``: a turn at the gate and a
    pooled connection (the pool's ``pool_timeout``). ``statement``: each round trip on a connection
    (asyncpg's ``command_timeout``, enforced in the client)."""

    connect: float = DEFAULT_DB_CONNECT_TIMEOUT
    acquire: float = DEFAULT_DB_ACQUIRE_TIMEOUT
    statement: float = DEFAULT_DB_STATEMENT_TIMEOUT

    @classmethod
    def of(cls, settings: CommonSettings) -> Deadlines:
        return cls(
            connect=settings.db_connect_timeout_seconds,
            acquire=settings.db_acquire_timeout_seconds,
            statement=settings.db_statement_timeout_seconds,
        )


class DatabaseDeadlineExceeded(TimeoutError):
    """A unit of work gave up waiting for the database: an outage (503 + Retry-After, retried by loops)."""

    def __init__(self, phase: str, seconds: float) -> None:
        super().__init__(f"no {phase} from the database within {seconds:g} s")
        self.phase = phase


@dataclass(frozen=True, slots=True)
class _EngineSetup:
    service: str
    deadlines: Deadlines


# What create_session_factory needs to know of its engine (the service for metrics, the acquire deadline).
_SETUPS: weakref.WeakKeyDictionary[Engine, _EngineSetup] = weakref.WeakKeyDictionary()


def deadlines_of(engine: AsyncEngine) -> Deadlines:
    """The deadlines ``engine`` was created with (the defaults for an engine made elsewhere)."""
    setup = _SETUPS.get(engine.sync_engine)
    return setup.deadlines if setup is not None else Deadlines()


def create_engine(
    url: str,
    *,
    pool_size: int = 20,
    max_overflow: int = 10,
    deadlines: Deadlines | None = None,
    service: str = "",
) -> AsyncEngine:
    deadlines = deadlines or Deadlines()
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_recycle=1800,
        pool_timeout=deadlines.acquire,
        connect_args={"timeout": deadlines.connect, "command_timeout": deadlines.statement},
    )
    _SETUPS[engine.sync_engine] = _EngineSetup(service, deadlines)
    initialise_deadline_series(service)
    # A connection the server closed (a database restart) is detected by the pool, not by a user request.
    event.listen(engine.sync_engine, "checkout", _discard_if_closed)
    event.listen(engine.sync_engine, "handle_error", _discard_after_deadline)
    event.listen(engine.sync_engine, "invalidate", _close_at_once)
    return engine


def _discard_if_closed(dbapi_connection: Any, record: ConnectionPoolEntry, proxy: Any) -> None:
    """Checkout check without a round trip. SQLAlchemy's ``pool_pre_ping`` on asyncpg costs three per
    checkout (BEGIN, a ping, ROLLBACK): 9 % of the bookmarks process's CPU per write, plus PostgreSQL's
    share. A restarting server closes its connections, and asyncpg marks a connection closed as soon as
    its socket does, idle in the pool or not; raising DisconnectionError makes the pool discard it and
    hand out a fresh one (docs/decisions/0054-database-gate-and-pool.md)."""
    driver = record.driver_connection
    if driver is None or driver.is_closed():
        raise DisconnectionError("the server closed this pooled connection")


def _discard_after_deadline(context: ExceptionContext) -> None:
    """A statement or connect that ran out of time leaves its connection mid-protocol: it is invalidated
    (discarded), never returned to the pool. The pool's other connections stay: they may be idle and fine."""
    if not isinstance(context.original_exception, TimeoutError):
        return
    setup = _SETUPS.get(context.engine) if context.engine is not None else None
    phase = "statement" if context.connection is not None else "connect"
    DB_DEADLINES_EXCEEDED.labels(setup.service if setup else "", phase).inc()
    context.is_disconnect = True
    context.invalidate_pool_on_disconnect = False


def _close_at_once(dbapi_connection: Any, record: ConnectionPoolEntry, exception: BaseException | None) -> None:
    """An invalidated connection is closed without a goodbye: the graceful close SQLAlchemy tries first
    waits up to 2 s for a server that may not answer at all."""
    driver = record.driver_connection
    if isinstance(driver, asyncpg.Connection) and not driver.is_closed():
        driver.terminate()


# Whether this task (or the task that created it) already holds a permit of the gate below.
_HOLDING: ContextVar[bool] = ContextVar("holding_database_permit", default=False)


class _GatedSession(AsyncSession):
    """A session that takes a permit of its factory's gate for as long as it is open (``async with``).

    The gate is a first-come, first-served queue in front of the database: at most ``gate``'s size units of
    work are in PostgreSQL at once, and the others wait in arrival order. Without it, every request of a
    burst held a backend (up to the pool's size plus overflow), the backends fought over two cores and the
    WAL lock, and the pool handed a returned connection to whichever request asked first, not to the one
    waiting longest: at 64 concurrent writes, the slowest 1 % took three times the median.
    A session opened while one is already held (nested, or in a task started from one) takes no second
    permit, so nesting cannot deadlock. A turn that does not come within the acquire deadline is an outage
    (:class:`DatabaseDeadlineExceeded`): while the database hangs, the queue empties at that pace instead
    of growing."""

    gate: ClassVar[asyncio.Semaphore]  # set per factory by create_session_factory
    setup: ClassVar[_EngineSetup]
    _gated: bool = False

    async def __aenter__(self) -> Self:
        if not _HOLDING.get():
            await self._take_turn()
            self._gated, self._token = True, _HOLDING.set(True)
        return await super().__aenter__()

    async def _take_turn(self) -> None:
        deadline = self.setup.deadlines.acquire
        try:
            async with asyncio.timeout(deadline):
                await self.gate.acquire()
        except TimeoutError:
            DB_DEADLINES_EXCEEDED.labels(self.setup.service, "acquire").inc()
            raise DatabaseDeadlineExceeded("turn at the gate", deadline) from None

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
    setup = _SETUPS.get(engine.sync_engine) or _EngineSetup("", Deadlines())
    gated = type("GatedSession", (_GatedSession,), {"gate": asyncio.Semaphore(concurrency), "setup": setup})
    return async_sessionmaker(engine, class_=gated, expire_on_commit=False)


@asynccontextmanager
async def transaction(sessions: SessionFactory) -> AsyncIterator[AsyncSession]:
    """A unit of work: everything done with the session commits together or not at all.

    A permit of ``sessions``' gate within the acquire deadline, then a pooled connection; each round trip
    within the statement deadline (the engine's asyncpg ``command_timeout``). A unit that fails with an
    outage (:func:`common.outages.is_outage`: 503 with ``Retry-After``) or is cancelled discards its
    connection instead of sending ROLLBACK: the connection may be in the middle of a statement (a deadline
    ran out, the server dropped it), and the server rolls back what it has when the connection closes. A
    statement deadline that runs out counts in ``db_deadlines_exceeded_total`` once."""
    async with sessions() as session:
        try:
            yield session
        except BaseException as exc:
            await _end_failed(session, exc)
            raise
        try:
            await session.commit()
        except BaseException as exc:
            if _leaves_connection_unusable(exc):
                await _discard(session)
            raise


@asynccontextmanager
async def single_statements(sessions: SessionFactory) -> AsyncIterator[AsyncConnection]:
    """A unit of work whose statements each commit on their own (the connection in autocommit): no BEGIN
    and no COMMIT round trip, for a unit that is one statement. Core statements only, on the session's
    connection (no ORM layer per execute). Deadlines, the gate and a failed unit's connection are as in
    :func:`transaction`."""
    async with transaction(sessions) as session:
        yield await session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})


def asyncpg_dsn(url: str) -> str:
    """The plain libpq DSN of a SQLAlchemy asyncpg URL (for LISTEN connections and tools)."""
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


async def database_ready(engine: AsyncEngine) -> None:
    """One round trip on a pooled connection, within the engine's deadlines."""
    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))


class DatabaseReadiness:
    """The readiness check of a process's database, with a grace period (``DB_READY_GRACE_SECONDS``).

    The check fails only once the database has failed every check for ``grace_seconds``, counted from
    the start of the first failing one: one slow answer does not take a replica out of rotation, a
    database that stopped answering does within the grace plus one check. The first check that passes
    makes the process ready again."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        grace_seconds: float,
        check: Callable[[AsyncEngine], Awaitable[None]] = database_ready,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.engine = engine
        self.grace_seconds = grace_seconds
        self._check = check
        self._clock = clock
        self.failing_since: float | None = None

    async def __call__(self) -> None:
        started = self._clock()
        try:
            await self._check(self.engine)
        except Exception as exc:
            if self.failing_since is None:
                self.failing_since = started
                log.warning("database check failed; not ready if it keeps failing: %s", type(exc).__name__)
            if self._clock() - self.failing_since >= self.grace_seconds:
                raise
            return
        if self.failing_since is not None:
            log.warning("database answers again after %.1f s", self._clock() - self.failing_since)
        self.failing_since = None


def _leaves_connection_unusable(exc: BaseException) -> bool:
    return isinstance(exc, asyncio.CancelledError) or is_outage(exc)


async def _end_failed(session: AsyncSession, exc: BaseException) -> None:
    if _leaves_connection_unusable(exc):
        await _discard(session)
        return
    try:
        await session.rollback()
    except BaseException:
        await _discard(session)
        raise


async def _discard(session: AsyncSession) -> None:
    """Close the session's connection at once (no round trip: ``_close_at_once``) and drop it from the pool."""
    await session.invalidate()
