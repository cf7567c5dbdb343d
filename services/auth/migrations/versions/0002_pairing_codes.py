"""Pairing codes (docs/pairing-and-capture.md): a second device joins an account with a short code.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pairing_codes",
        sa.Column("code_hash", sa.LargeBinary, primary_key=True),
        sa.Column("user_id", UUID(as_uuid=True), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_pairing_codes_user", "pairing_codes", ["user_id"])
    op.create_index("ix_pairing_codes_expires", "pairing_codes", ["expires_at"])


def downgrade() -> None:
    op.drop_table("pairing_codes")
