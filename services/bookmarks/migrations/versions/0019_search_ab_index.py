"""Search's middle tier (docs/decisions/0153-search-three-tiers-read-cheapest-first.md): a GIN index of the
lexemes of ``search_vector`` at weight A or B (``ts_filter``), so "every word as written in the fields at
weight A or B" is a plain index read (bookmarks.search.sql). Nothing is stored or written besides the index.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28
"""

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


# CONCURRENTLY: a large table keeps taking writes while the index is built.
def upgrade() -> None:
    with op.get_context().autocommit_block():
        op.execute(
            "CREATE INDEX CONCURRENTLY ix_bookmarks_search_ab ON bookmarks USING gin (ts_filter(search_vector, '{a,b}'))"
        )


def downgrade() -> None:
    with op.get_context().autocommit_block():
        op.execute("DROP INDEX CONCURRENTLY IF EXISTS ix_bookmarks_search_ab")
