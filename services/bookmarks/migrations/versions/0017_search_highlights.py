"""Search covers highlights: each bookmark keeps its live highlights' quotes and notes (for snippets) and
their part of ``search_vector`` (so a PUT can rebuild the vector without reading them).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "bookmarks",
        sa.Column("search_highlight_texts", sa.ARRAY(sa.Text()), server_default=sa.text("'{}'"), nullable=False),
    )
    op.add_column(
        "bookmarks",
        sa.Column("search_highlight_vector", postgresql.TSVECTOR(), server_default=sa.text("''"), nullable=False),
    )


def downgrade() -> None:
    op.drop_column("bookmarks", "search_highlight_vector")
    op.drop_column("bookmarks", "search_highlight_texts")
