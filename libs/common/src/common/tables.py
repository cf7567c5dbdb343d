"""Infrastructure tables every service database has: outbox, processed-event inbox, dead letters.

Each service's first Alembic revision creates them from a frozen copy of their DDL; the migration tests
compare every migrated database with these definitions.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Column, DateTime, Index, Integer, Text, func, text
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlmodel import Field, SQLModel


class OutboxRow(SQLModel, table=True):
    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_unpublished", "id", postgresql_where=text("published_at IS NULL")),)

    id: int | None = Field(default=None, sa_column=Column(BigInteger, primary_key=True, autoincrement=True))
    topic: str = Field(sa_column=Column(Text, nullable=False))
    key: str = Field(sa_column=Column(Text, nullable=False))
    payload: dict[str, Any] = Field(sa_column=Column(JSONB, nullable=False))
    headers: dict[str, str] = Field(sa_column=Column(JSONB, nullable=False, server_default=text("'{}'")))
    created_at: datetime = Field(
        sa_column=Column(DateTime(timezone=True), nullable=False, server_default=func.clock_timestamp())
    )
    published_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))


class ProcessedEvent(SQLModel, table=True):
    __tablename__ = "processed_events"

    event_id: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    topic: str = Field(sa_column=Column(Text, nullable=False))
    processed_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False, server_default=func.now()))


class DeadLetter(SQLModel, table=True):
    __tablename__ = "dead_letters"

    id: int | None = Field(default=None, sa_column=Column(BigInteger, primary_key=True, autoincrement=True))
    topic: str = Field(sa_column=Column(Text, nullable=False))
    partition: int = Field(sa_column=Column(Integer, nullable=False))
    offset: int = Field(sa_column=Column(BigInteger, nullable=False))
    key: str | None = Field(default=None, sa_column=Column(Text))
    payload: str = Field(sa_column=Column(Text, nullable=False))
    error: str = Field(sa_column=Column(Text, nullable=False))
    attempts: int = Field(sa_column=Column(Integer, nullable=False))
    created_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False, server_default=func.now()))


INFRA_TABLES = (OutboxRow.__table__, ProcessedEvent.__table__, DeadLetter.__table__)  # type: ignore[attr-defined]
