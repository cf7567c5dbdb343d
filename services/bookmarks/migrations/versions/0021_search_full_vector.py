"""A search vector that always fits (bookmarks.search.sql, ``full_vector``): the function of
``0021_search_functions.sql``, ``search_full_vector(fields, highlights, page)``. A row's
texts are each within their limits, but folded and stemmed together they could pass the 1 MB that
PostgreSQL keeps in one tsvector, and the write failed. The function leaves out the page's part, then the
highlights', when the vector would not fit. No stored value changes: every stored vector fits.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-29
"""

from pathlib import Path

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

INDEX_SQL = Path(__file__).with_name("0021_search_functions.sql")  # one statement


def upgrade() -> None:
    op.get_bind().exec_driver_sql(INDEX_SQL.read_text(encoding="utf-8").strip())


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS search_full_vector(tsvector, tsvector, tsvector)")
