"""Initial enrichment schema: jobs, bookmark enrichments, results cache, snapshots, quotas, projections.

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

_IN_FLIGHT = "status IN ('pending', 'processing', 'retrying')"
_STATUSES = "status IN ('pending', 'processing', 'retrying', 'completed', 'failed')"

# Workers LISTEN on this channel so a new job is picked up at once instead of at the next poll.
_JOBS_NOTIFY = (
    """
    CREATE OR REPLACE FUNCTION enrichment_jobs_notify() RETURNS trigger AS $$
    BEGIN
      PERFORM pg_notify('enrichment_jobs', '');
      RETURN NULL;
    END;
    $$ LANGUAGE plpgsql
    """,
    "CREATE TRIGGER enrichment_jobs_notify AFTER INSERT ON jobs "
    "FOR EACH STATEMENT EXECUTE FUNCTION enrichment_jobs_notify()",
)

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


def _ts(name: str, *, nullable: bool = True, default_now: bool = False) -> sa.Column[object]:
    default = sa.text("now()") if default_now else None
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable, server_default=default)


def _create_job_tables() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", UUID(as_uuid=True), primary_key=True),
        sa.Column("normalized_url", sa.Text, nullable=False),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("charged_user_id", UUID(as_uuid=True)),
        sa.Column("status", sa.Text, nullable=False, server_default="pending"),
        sa.Column("attempts", sa.Integer, nullable=False, server_default=sa.text("0")),
        _ts("next_attempt_at", nullable=False, default_now=True),
        _ts("lease_until"),
        sa.Column("worker_id", sa.Text),
        sa.Column("error_code", sa.Text),
        sa.Column("trace_context", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        _ts("created_at", nullable=False, default_now=True),
        _ts("updated_at", nullable=False, default_now=True),
        sa.CheckConstraint(_STATUSES, name="ck_jobs_status"),
    )
    op.create_index("ix_jobs_due", "jobs", ["next_attempt_at"], postgresql_where=sa.text(_IN_FLIGHT))
    op.create_index(
        "ux_jobs_in_flight_url", "jobs", ["normalized_url"], unique=True, postgresql_where=sa.text(_IN_FLIGHT)
    )
    op.create_index(
        "ix_jobs_charged_user", "jobs", ["charged_user_id"], postgresql_where=sa.text("charged_user_id IS NOT NULL")
    )
    op.create_index(
        "ix_jobs_finished", "jobs", ["updated_at"], postgresql_where=sa.text("status IN ('completed', 'failed')")
    )
    op.create_index("ix_jobs_status", "jobs", ["status"])
    for statement in _JOBS_NOTIFY:
        op.execute(statement)
    op.create_table(
        "bookmark_enrichments",
        sa.Column("user_id", UUID(as_uuid=True), primary_key=True),
        sa.Column("client_bookmark_id", sa.Text, primary_key=True),
        sa.Column("normalized_url", sa.Text, nullable=False),
        sa.Column("job_id", UUID(as_uuid=True), sa.ForeignKey("jobs.id", ondelete="SET NULL")),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("error_code", sa.Text),
        sa.Column("result", JSONB),
        sa.Column("cache_hit", sa.Boolean, nullable=False, server_default=sa.text("false")),
        _ts("client_saved_at"),
        _ts("enriched_at"),
        _ts("created_at", nullable=False, default_now=True),
        _ts("updated_at", nullable=False, default_now=True),
        sa.CheckConstraint(_STATUSES, name="ck_bookmark_enrichments_status"),
    )
    op.create_index(
        "ix_bookmark_enrichments_job",
        "bookmark_enrichments",
        ["job_id"],
        postgresql_where=sa.text("job_id IS NOT NULL"),
    )
    op.create_index("ix_bookmark_enrichments_user_url", "bookmark_enrichments", ["user_id", "normalized_url"])
    op.create_index("ix_bookmark_enrichments_url", "bookmark_enrichments", ["normalized_url"])


def _create_result_tables() -> None:
    op.create_table(
        "results_cache",
        sa.Column("normalized_url", sa.Text, primary_key=True),
        sa.Column("result", JSONB, nullable=False),
        sa.Column("job_id", UUID(as_uuid=True)),
        _ts("created_at", nullable=False, default_now=True),
        _ts("expires_at", nullable=False),
    )
    op.create_index("ix_results_cache_expires", "results_cache", ["expires_at"])
    op.create_table(
        "snapshots",
        sa.Column("normalized_url", sa.Text, primary_key=True),
        sa.Column("kind", sa.Text, primary_key=True),
        sa.Column("content_type", sa.Text, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
        sa.Column("size_bytes", sa.Integer, nullable=False),
        sa.Column("job_id", UUID(as_uuid=True)),
        _ts("created_at", nullable=False, default_now=True),
        sa.CheckConstraint("kind IN ('html', 'screenshot', 'readable_text')", name="ck_snapshots_kind"),
    )


def _create_quota_tables() -> None:
    op.create_table(
        "user_quotas",
        sa.Column("user_id", UUID(as_uuid=True), primary_key=True),
        sa.Column("month", sa.Date, nullable=False),
        sa.Column("month_used", sa.Integer, nullable=False, server_default=sa.text("0")),
        _ts("updated_at", nullable=False, default_now=True),
    )
    op.create_table(
        "quota_charges",
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=True),
        sa.Column("user_id", UUID(as_uuid=True), nullable=False),
        _ts("charged_at", nullable=False),
        sa.Column("job_id", UUID(as_uuid=True)),
    )
    op.create_index("ix_quota_charges_user_time", "quota_charges", ["user_id", "charged_at"])


def _create_projection_tables() -> None:
    op.create_table(
        "users",
        sa.Column("user_id", UUID(as_uuid=True), primary_key=True),
        sa.Column("use_ai", sa.Boolean, nullable=False, server_default=sa.text("false")),
        sa.Column("is_pro", sa.Boolean, nullable=False, server_default=sa.text("false")),
        sa.Column("deleted", sa.Boolean, nullable=False, server_default=sa.text("false")),
        _ts("event_at"),
        _ts("updated_at", nullable=False, default_now=True),
    )
    op.create_table(
        "bookmark_urls",
        sa.Column("user_id", UUID(as_uuid=True), primary_key=True),
        sa.Column("client_bookmark_id", sa.Text, primary_key=True),
        sa.Column("normalized_url", sa.Text, nullable=False),
        sa.Column("deleted", sa.Boolean, nullable=False, server_default=sa.text("false")),
        _ts("position", nullable=False),
    )
    op.create_index(
        "ix_bookmark_urls_user_url",
        "bookmark_urls",
        ["user_id", "normalized_url"],
        postgresql_where=sa.text("NOT deleted"),
    )
    op.create_table(
        "user_tags",
        sa.Column("user_id", UUID(as_uuid=True), primary_key=True),
        sa.Column("tag", sa.Text, primary_key=True),
        sa.Column("uses", sa.Integer, nullable=False, server_default=sa.text("1")),
        _ts("last_used_at", nullable=False, default_now=True),
    )


def upgrade() -> None:
    _create_infra_tables()
    _create_job_tables()
    _create_result_tables()
    _create_quota_tables()
    _create_projection_tables()


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS enrichment_jobs_notify ON jobs")
    op.execute("DROP FUNCTION IF EXISTS enrichment_jobs_notify()")
    for table in (
        "user_tags",
        "bookmark_urls",
        "users",
        "quota_charges",
        "user_quotas",
        "snapshots",
        "results_cache",
        "bookmark_enrichments",
        "jobs",
    ):
        op.drop_table(table)
    _drop_infra_tables()
