"""Initial bookmarks schema: bookmarks, user streams, deleted users, pending enrichments, infra tables.

Every revision states its own DDL and imports no application code: it must build the same schema in
every future checkout.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# Infrastructure tables every service database has: the outbox (with its NOTIFY trigger, which wakes the
# relay), the processed-event inbox of the idempotent consumers, and the consumers' dead letters.
_OUTBOX_NOTIFY = (
    "CREATE OR REPLACE FUNCTION outbox_notify() RETURNS trigger AS $$\n"
    "BEGIN\n"
    "  PERFORM pg_notify('outbox', '');\n"
    "  RETURN NULL;\n"
    "END;\n"
    "$$ LANGUAGE plpgsql",
    "CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify()",
)


def _create_infra_tables() -> None:
    op.create_table(
        "outbox",
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=True),
        sa.Column("topic", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("payload", JSONB, nullable=False),
        sa.Column("headers", JSONB, nullable=False, server_default=sa.text("'{}'")),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("clock_timestamp()")
        ),
        sa.Column("published_at", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_outbox_unpublished", "outbox", ["id"], postgresql_where=sa.text("published_at IS NULL"))
    op.create_table(
        "processed_events",
        sa.Column("event_id", UUID(as_uuid=True), primary_key=True),
        sa.Column("topic", sa.Text, nullable=False),
        sa.Column("processed_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
    )
    op.create_table(
        "dead_letters",
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=True),
        sa.Column("topic", sa.Text, nullable=False),
        sa.Column("partition", sa.Integer, nullable=False),
        sa.Column("offset", sa.BigInteger, nullable=False),
        sa.Column("key", sa.Text),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("error", sa.Text, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
    )
    for statement in _OUTBOX_NOTIFY:
        op.execute(statement)


def _drop_infra_tables() -> None:
    op.execute("DROP TRIGGER IF EXISTS outbox_notify ON outbox")
    op.execute("DROP FUNCTION IF EXISTS outbox_notify()")
    for table in ("dead_letters", "processed_events", "outbox"):
        op.drop_table(table)


def _ts(name: str, *, nullable: bool = True) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _create_bookmarks() -> None:
    op.create_table(
        "bookmarks",
        sa.Column("owner_uid", UUID(as_uuid=True), primary_key=True),
        sa.Column("client_bookmark_id", sa.Text, primary_key=True),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("normalized_url", sa.Text, nullable=False),
        sa.Column("domain", sa.Text, nullable=False),
        sa.Column("title", sa.Text),
        sa.Column("description", sa.Text),
        sa.Column("thumbnail_url", sa.Text),
        sa.Column("summary", sa.Text),
        sa.Column("save_why", sa.Text),
        sa.Column("tags", ARRAY(sa.Text), nullable=False, server_default=sa.text("'{}'")),
        sa.Column("enrichment_status", sa.Text, nullable=False, server_default="pending"),
        sa.Column("snapshot_status", sa.Text, nullable=False, server_default="pending"),
        sa.Column("last_error_code", sa.Text),
        sa.Column("is_favorite", sa.Boolean, nullable=False, server_default=sa.text("false")),
        sa.Column("collection_ids", ARRAY(sa.Text), nullable=False, server_default=sa.text("'{}'")),
        sa.Column("notes", sa.Text),
        _ts("client_saved_at"),
        _ts("last_opened_at"),
        _ts("created_at", nullable=False),
        _ts("updated_at", nullable=False),
        _ts("enriched_at"),
        _ts("deleted_at"),
    )
    # The delta stream's keyset: WHERE owner = ? AND (updated_at, id) > (?, ?) ORDER BY updated_at, id.
    op.create_index("ix_bookmarks_stream", "bookmarks", ["owner_uid", "updated_at", "client_bookmark_id"], unique=True)


def upgrade() -> None:
    _create_infra_tables()
    _create_bookmarks()
    op.create_table(
        "user_streams",
        sa.Column("owner_uid", UUID(as_uuid=True), primary_key=True),
        _ts("last_position", nullable=False),
        sa.Column("is_pro", sa.Boolean, nullable=False, server_default=sa.text("false")),
    )
    op.create_table(
        "deleted_users",
        sa.Column("owner_uid", UUID(as_uuid=True), primary_key=True),
        _ts("deleted_at", nullable=False),
    )
    op.create_table(
        "pending_enrichments",
        sa.Column("owner_uid", UUID(as_uuid=True), primary_key=True),
        sa.Column("client_bookmark_id", sa.Text, primary_key=True),
        sa.Column("normalized_url", sa.Text, nullable=False),
        sa.Column("event", JSONB, nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
    )


def downgrade() -> None:
    for table in ("pending_enrichments", "deleted_users", "user_streams", "bookmarks"):
        op.drop_table(table)
    _drop_infra_tables()
