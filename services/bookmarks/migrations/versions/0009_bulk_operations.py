"""Bulk changes with undo (docs/api-guide.md, section 14): what each bulk change set, until it expires.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-28
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE bulk_operations (
          token_hash text PRIMARY KEY,
          owner_uid uuid NOT NULL,
          created_at timestamptz NOT NULL DEFAULT now(),
          expires_at timestamptz NOT NULL,
          changes jsonb NOT NULL,
          undone_at timestamptz
        )
        """
    )
    op.execute("CREATE INDEX ix_bulk_operations_expires ON bulk_operations (expires_at)")


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS bulk_operations")
