"""Initial enrichment schema: jobs, bookmark enrichments, results cache, snapshots, quotas, projections.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from alembic import op

from common.migrations import create_infra_tables
from enrichment.store.tables import TABLES

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

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
    "DROP TRIGGER IF EXISTS enrichment_jobs_notify ON jobs",
    "CREATE TRIGGER enrichment_jobs_notify AFTER INSERT ON jobs "
    "FOR EACH STATEMENT EXECUTE FUNCTION enrichment_jobs_notify()",
)


def upgrade() -> None:
    bind = op.get_bind()
    create_infra_tables(bind)
    for model in TABLES:
        model.__table__.create(bind=bind, checkfirst=True)  # type: ignore[attr-defined]
    for statement in _JOBS_NOTIFY:
        bind.exec_driver_sql(statement)


def downgrade() -> None:
    bind = op.get_bind()
    bind.exec_driver_sql("DROP TRIGGER IF EXISTS enrichment_jobs_notify ON jobs")
    bind.exec_driver_sql("DROP FUNCTION IF EXISTS enrichment_jobs_notify()")
    for model in reversed(TABLES):
        model.__table__.drop(bind=bind, checkfirst=True)  # type: ignore[attr-defined]
