"""Tables of the import job (docs/api-guide.md, section 13), in SQLAlchemy Core.

The upload lives in ``import_chunks`` (bytea, 1 MiB per row) in the bookmarks database: every replica can
read it and a committed upload survives any crash. The job's checkpoint (``next_ordinal``) and counters
sit on the ``imports`` row and move in the same transaction as each batch's bookmarks and report rows.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import UUID

metadata = MetaData()


def _count(name: str) -> Column[int]:
    return Column(name, Integer, nullable=False, server_default=text("0"))


imports = Table(
    "imports",
    metadata,
    Column("id", UUID(as_uuid=True), primary_key=True),
    Column("owner_uid", UUID(as_uuid=True), nullable=False),
    Column("status", Text, nullable=False),  # queued | running | completed | failed
    Column("requested_format", Text, nullable=False),
    Column("format", Text),  # the detected (or requested) one, once known
    Column("size_bytes", BigInteger, nullable=False),
    Column("total", Integer),
    _count("processed"),
    _count("created"),
    _count("updated"),
    _count("unchanged"),
    _count("invalid"),
    Column("next_ordinal", Integer, nullable=False, server_default=text("0")),  # the checkpoint
    Column("claims", Integer, nullable=False, server_default=text("0")),  # > 1: resumed after a crash
    Column("lease_owner", Text),
    Column("lease_until", DateTime(timezone=True)),
    Column("error", Text),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    Index("ix_imports_owner", "owner_uid", "created_at"),
    Index("ix_imports_due", "status", "lease_until", postgresql_where=text("status IN ('queued', 'running')")),
)

import_chunks = Table(
    "import_chunks",
    metadata,
    Column("import_id", UUID(as_uuid=True), ForeignKey("imports.id", ondelete="CASCADE"), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("data", LargeBinary, nullable=False),
)

import_report = Table(
    "import_report",
    metadata,
    Column("import_id", UUID(as_uuid=True), ForeignKey("imports.id", ondelete="CASCADE"), primary_key=True),
    Column("ordinal", Integer, primary_key=True),
    Column("line", Integer, nullable=False),
    Column("url", Text, nullable=False),
    Column("outcome", Text, nullable=False),
    Column("reason", Text),
    Column("client_bookmark_id", Text),
)
