"""Async engine and sessions (SQLAlchemy on asyncpg). One engine per process, built in the lifespan."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar, Self, TypeAlias

import asyncpg
from sqlalchemy import ClauseElement, event, text
from sqlalchemy.dialects.postgresql import asyncpg as asyncpg_dialect
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.selectable import ReturnsRows

from common.outages import is_outage
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
    hand out a fresh one (docs/decisions/0054-database-gate-and-pool.md)."""
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
    waiting longest: at 64 concurrent writes, the slowest 1 % took three times the median.
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


# --- prepared statements on the driver connection ------------------------------------------------------

_DIALECT = asyncpg_dialect.dialect()  # type: ignore[no-untyped-call]
DriverConnection: TypeAlias = asyncpg.Connection


@dataclass(frozen=True, slots=True)
class Prepared:
    """A Core statement compiled once for asyncpg, run on a :func:`driver_transaction`.

    A session runs a statement through several layers (cache key, execution context, cursor adapter,
    result object): about 0.2 ms of CPU per statement here, more than asyncpg itself. A hot path compiles
    its statements once into this and sends them on the pooled asyncpg connection directly, applying the
    same bind and result processors SQLAlchemy would. The SQL still comes only from Core statements.
    """

    sql: str
    names: tuple[str, ...]  # bound parameter names, in placeholder ($1, $2, …) order
    fixed: dict[str, Any]  # values compiled into the statement (literals)
    binds: dict[str, Callable[[Any], Any]]
    results: tuple[tuple[str, Callable[[Any], Any] | None], ...]  # selected or returned columns, in order

    @classmethod
    def of(cls, statement: ClauseElement) -> Prepared:
        compiled = statement.compile(dialect=_DIALECT)
        assert isinstance(compiled, SQLCompiler)
        names = tuple(compiled.positiontup or ())
        params = {name: compiled.binds[name] for name in names}  # by rendered name (param_1, not its key)
        if any(p.expanding for p in params.values()):
            raise ValueError("expanding (IN list) parameters cannot be prepared once")
        columns = statement.exported_columns if isinstance(statement, ReturnsRows) else ()  # SELECT or RETURNING
        return cls(
            sql=str(compiled),
            names=names,
            fixed={name: p.value for name, p in params.items() if not p.required},
            binds={
                name: process
                for name, p in params.items()
                if (process := p.type.dialect_impl(_DIALECT).bind_processor(_DIALECT)) is not None
            },
            results=tuple((c.name, c.type.dialect_impl(_DIALECT).result_processor(_DIALECT, None)) for c in columns),
        )

    def arguments(self, parameters: Mapping[str, Any]) -> list[Any]:
        """The positional arguments for ``parameters`` (by name; literals filled in, bind processors run)."""
        values = []
        for name in self.names:
            value = parameters[name] if name in parameters else self.fixed[name]
            process = self.binds.get(name)
            values.append(process(value) if process is not None else value)
        return values

    async def rows(self, driver: DriverConnection, parameters: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Run the statement; each row as ``{column name: value}`` after the result processors."""
        records = await driver.fetch(self.sql, *self.arguments(parameters))
        return [
            {name: process(value) if process is not None else value
             for (name, process), value in zip(self.results, record.values(), strict=True)}
            for record in records
        ]  # fmt: skip


# How many pooled connections a driver transaction tries to begin on before its outage is the caller's.
BEGIN_ATTEMPTS = 3


@asynccontextmanager
async def driver_transaction(sessions: SessionFactory) -> AsyncIterator[DriverConnection]:
    """A transaction on a pooled connection's asyncpg connection, for :class:`Prepared` statements: the
    session's gate and pool as every unit of work, and BEGIN/COMMIT (ROLLBACK on an exception) sent by
    asyncpg. SQLAlchemy never starts a transaction of its own on this connection (it begins lazily, at its
    first statement), so returning the connection to the pool costs no round trip.

    Nothing checks a pooled connection with a round trip at checkout (``_discard_if_closed``), so BEGIN
    is that check: a connection that fails it with an outage (the server dropped it while it sat in the
    pool) is invalidated and the unit begins on another one, up to ``BEGIN_ATTEMPTS`` connections. Nothing
    of the unit has run yet, so beginning again repeats nothing."""
    async with sessions() as session:
        driver, transaction = await _begin(session)
        try:
            yield driver
        except BaseException:
            if not driver.is_closed():  # a lost connection has nothing to undo; ROLLBACK would hide the error
                await transaction.rollback()
            raise
        await transaction.commit()


async def _begin(session: AsyncSession) -> tuple[DriverConnection, asyncpg.transaction.Transaction]:
    attempt = 1
    while True:
        driver = await _driver_of(session)  # a failure to connect is the caller's at once
        transaction = driver.transaction()
        try:
            await transaction.start()
            return driver, transaction
        except Exception as exc:
            if attempt == BEGIN_ATTEMPTS or not is_outage(exc):
                raise
        attempt += 1
        await session.invalidate()  # discards this connection; the session's next one is fresh


async def _driver_of(session: AsyncSession) -> DriverConnection:
    connection = await session.connection()
    driver = (await connection.get_raw_connection()).driver_connection
    if driver is None:
        raise RuntimeError("the pooled connection has no driver connection")
    return driver
