"""Job priority (docs/api-guide.md, section 13): bulk work of imports is claimed after every due interactive job.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_IN_FLIGHT = sa.text("status IN ('pending', 'processing', 'retrying')")


# IF NOT EXISTS: 0001 creates the tables from the current models, so a fresh database has them already.
def upgrade() -> None:
    op.execute("ALTER TABLE jobs ADD COLUMN IF NOT EXISTS priority integer NOT NULL DEFAULT 0")
    op.create_index(
        "ix_jobs_due_by_priority",
        "jobs",
        ["priority", "next_attempt_at"],
        postgresql_where=_IN_FLIGHT,
        if_not_exists=True,
    )


def downgrade() -> None:
    op.drop_index("ix_jobs_due_by_priority", table_name="jobs", if_exists=True)
    op.execute("ALTER TABLE jobs DROP COLUMN IF EXISTS priority")
