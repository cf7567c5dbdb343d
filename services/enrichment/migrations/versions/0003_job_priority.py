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


def upgrade() -> None:
    op.add_column("jobs", sa.Column("priority", sa.Integer, nullable=False, server_default=sa.text("0")))
    op.create_index("ix_jobs_due_by_priority", "jobs", ["priority", "next_attempt_at"], postgresql_where=_IN_FLIGHT)


def downgrade() -> None:
    op.drop_index("ix_jobs_due_by_priority", table_name="jobs")
    op.drop_column("jobs", "priority")
