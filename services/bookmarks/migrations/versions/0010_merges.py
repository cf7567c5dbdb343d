"""Duplicates merged (docs/api-guide.md, section 14): which bookmark each merged one went into.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE merges (
          owner_uid uuid NOT NULL,
          client_bookmark_id text NOT NULL,
          merged_into text NOT NULL,
          deleted_at timestamptz NOT NULL,
          PRIMARY KEY (owner_uid, client_bookmark_id)
        )
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS merges")
