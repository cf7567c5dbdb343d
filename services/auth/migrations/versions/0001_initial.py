"""Initial auth schema: users, identities, settings, subscriptions, refresh tokens, signing keys, infra tables.

Every revision states its own DDL and imports no application code: it must build the same schema in
every future checkout.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB, UUID

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


def _created_at() -> sa.Column[object]:
    return sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()"))


def _updated_at() -> sa.Column[object]:
    return sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()"))


def _user_id(*, primary_key: bool = False) -> sa.Column[object]:
    return sa.Column("user_id", UUID(as_uuid=True), sa.ForeignKey("users.id"), primary_key=primary_key, nullable=False)


def _create_user_tables() -> None:
    op.create_table(
        "users",
        sa.Column("id", UUID(as_uuid=True), primary_key=True),
        sa.Column("is_anonymous", sa.Boolean, nullable=False),
        sa.Column("display_name", sa.Text),
        sa.Column("email", sa.Text),
        sa.Column("photo_url", sa.Text),
        _created_at(),
        _updated_at(),
    )
    op.create_table(
        "identities",
        sa.Column("provider", sa.Text, primary_key=True),
        sa.Column("subject", sa.Text, primary_key=True),
        _user_id(),
        _created_at(),
    )
    op.create_index("ix_identities_user", "identities", ["user_id"])
    op.create_table(
        "user_settings",
        _user_id(primary_key=True),
        sa.Column("use_ai", sa.Boolean, nullable=False, server_default=sa.text("false")),
        _updated_at(),
    )
    op.create_table(
        "subscriptions",
        _user_id(primary_key=True),
        sa.Column("is_pro", sa.Boolean, nullable=False, server_default=sa.text("false")),
        _updated_at(),
    )


def _create_token_tables() -> None:
    op.create_table(
        "refresh_token_families",
        sa.Column("id", UUID(as_uuid=True), primary_key=True),
        _user_id(),
        _created_at(),
        sa.Column("revoked_at", sa.DateTime(timezone=True)),
        sa.Column("revoked_reason", sa.Text),
    )
    op.create_index("ix_refresh_token_families_user", "refresh_token_families", ["user_id"])
    op.create_table(
        "refresh_tokens",
        sa.Column("token_hash", sa.LargeBinary, primary_key=True),
        sa.Column("family_id", UUID(as_uuid=True), sa.ForeignKey("refresh_token_families.id"), nullable=False),
        _user_id(),
        _created_at(),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_refresh_tokens_family", "refresh_tokens", ["family_id"])
    op.create_index("ix_refresh_tokens_user", "refresh_tokens", ["user_id"])
    op.create_index("ix_refresh_tokens_expires", "refresh_tokens", ["expires_at"])
    op.create_table(
        "signing_keys",
        sa.Column("kid", sa.Text, primary_key=True),
        sa.Column("private_pem", sa.Text, nullable=False),
        _created_at(),
        sa.Column("retired_at", sa.DateTime(timezone=True)),
    )


def upgrade() -> None:
    _create_infra_tables()
    _create_user_tables()
    _create_token_tables()


def downgrade() -> None:
    for table in (
        "signing_keys",
        "refresh_tokens",
        "refresh_token_families",
        "subscriptions",
        "user_settings",
        "identities",
        "users",
    ):
        op.drop_table(table)
    _drop_infra_tables()
