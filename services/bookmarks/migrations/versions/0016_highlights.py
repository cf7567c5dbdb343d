"""Highlights and notes (docs/api-guide.md, section 16): a record of their own in the delta stream, and
each bookmark's readable text they are anchored in.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "highlights",
        sa.Column("owner_uid", sa.UUID(), nullable=False),
        sa.Column("highlight_id", sa.Text(), nullable=False),
        sa.Column("client_bookmark_id", sa.Text(), nullable=False),
        sa.Column("quote", sa.Text(), nullable=False),
        sa.Column("prefix", sa.Text(), nullable=False),
        sa.Column("suffix", sa.Text(), nullable=False),
        sa.Column("quote_start", sa.Integer(), nullable=True),
        sa.Column("quote_end", sa.Integer(), nullable=True),
        sa.Column("color", sa.Text(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("anchor", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("with_bookmark", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.PrimaryKeyConstraint("owner_uid", "highlight_id"),
    )
    op.create_index("ix_highlights_bookmark", "highlights", ["owner_uid", "client_bookmark_id"], unique=False)
    op.create_index("ix_highlights_stream", "highlights", ["owner_uid", "updated_at", "highlight_id"], unique=True)
    op.create_table(
        "page_texts",
        sa.Column("owner_uid", sa.UUID(), nullable=False),
        sa.Column("client_bookmark_id", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("owner_uid", "client_bookmark_id"),
    )


def downgrade() -> None:
    op.drop_table("page_texts")
    op.drop_index("ix_highlights_stream", table_name="highlights")
    op.drop_index("ix_highlights_bookmark", table_name="highlights")
    op.drop_table("highlights")
