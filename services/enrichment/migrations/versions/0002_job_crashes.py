"""Count worker crashes (lease expiries) of a job apart from its attempts at the site.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


# IF NOT EXISTS: 0001 creates the tables from the current models, so a fresh database has it already.
def upgrade() -> None:
    op.execute("ALTER TABLE jobs ADD COLUMN IF NOT EXISTS crashes integer NOT NULL DEFAULT 0")


def downgrade() -> None:
    op.execute("ALTER TABLE jobs DROP COLUMN IF EXISTS crashes")
