"""Async engine and sessions (SQLAlchemy on asyncpg). One engine per process, built in the lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

SessionFactory = async_sessionmaker[AsyncSession]


def create_engine(url: str, *, pool_size: int = 20, max_overflow: int = 10) -> AsyncEngine:
    return create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_recycle=1800,
        # A broken connection after a database restart is detected by the pool, not by a user request.
        pool_pre_ping=True,
    )


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
