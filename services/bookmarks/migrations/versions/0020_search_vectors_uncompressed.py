"""Search vectors stored out of line without compression
(docs/decisions/0161-search-vectors-stored-uncompressed.md): a phrase or a row test reads a row's whole
``search_vector``, and decompressing it was most of that read's cost. A PUT reads ``search_page_vector``
to rebuild ``search_vector``. Only the column's storage changes (a catalog update): a value takes the
new form when its row is next written, and a value in the old form reads as before.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-29
"""

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

COLUMNS = ("search_vector", "search_page_vector")


def upgrade() -> None:
    for column in COLUMNS:
        op.execute(f"ALTER TABLE bookmarks ALTER COLUMN {column} SET STORAGE EXTERNAL")


def downgrade() -> None:
    for column in COLUMNS:
        op.execute(f"ALTER TABLE bookmarks ALTER COLUMN {column} SET STORAGE EXTENDED")
