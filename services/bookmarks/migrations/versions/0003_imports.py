"""Import job (docs/api-guide.md, section 13): imports, import_chunks, import_report; bookmarks by normalized URL.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_INDEX = "ix_bookmarks_owner_normalized_url"


def _count(name: str) -> sa.Column[object]:
    return sa.Column(name, sa.Integer, nullable=False, server_default=sa.text("0"))


def _import_id() -> sa.Column[object]:
    return sa.Column("import_id", UUID(as_uuid=True), sa.ForeignKey("imports.id", ondelete="CASCADE"), primary_key=True)


def upgrade() -> None:
    op.create_table(
        "imports",
        sa.Column("id", UUID(as_uuid=True), primary_key=True),
        sa.Column("owner_uid", UUID(as_uuid=True), nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("requested_format", sa.Text, nullable=False),
        sa.Column("format", sa.Text),
        sa.Column("size_bytes", sa.BigInteger, nullable=False),
        sa.Column("total", sa.Integer),
        *(_count(name) for name in ("processed", "created", "updated", "unchanged", "invalid", "next_ordinal")),
        _count("claims"),
        sa.Column("lease_owner", sa.Text),
        sa.Column("lease_until", sa.DateTime(timezone=True)),
        sa.Column("error", sa.Text),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_imports_owner", "imports", ["owner_uid", "created_at"])
    op.create_index(
        "ix_imports_due",
        "imports",
        ["status", "lease_until"],
        postgresql_where=sa.text("status IN ('queued', 'running')"),
    )
    op.create_table(
        "import_chunks",
        _import_id(),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "import_report",
        _import_id(),
        sa.Column("ordinal", sa.Integer, primary_key=True),
        sa.Column("line", sa.Integer, nullable=False),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("outcome", sa.Text, nullable=False),
        sa.Column("reason", sa.Text),
        sa.Column("client_bookmark_id", sa.Text),
    )
    # An import merges each item into the live bookmark with its normalized URL: one index probe each.
    op.create_index(
        _INDEX, "bookmarks", ["owner_uid", "normalized_url"], postgresql_where=sa.text("deleted_at IS NULL")
    )


def downgrade() -> None:
    op.drop_index(_INDEX, table_name="bookmarks")
    for table in ("import_report", "import_chunks", "imports"):
        op.drop_table(table)
