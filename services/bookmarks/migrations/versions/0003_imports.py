"""Import job (docs/api-guide.md, section 13): imports, import_chunks, import_report; bookmarks by normalized URL.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

from bookmarks.store.import_tables import metadata

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_INDEX = "ix_bookmarks_owner_normalized_url"


def upgrade() -> None:
    metadata.create_all(bind=op.get_bind(), checkfirst=True)
    # An import merges each item into the live bookmark with its normalized URL: one index probe each.
    op.create_index(
        _INDEX,
        "bookmarks",
        ["owner_uid", "normalized_url"],
        postgresql_where=sa.text("deleted_at IS NULL"),
        if_not_exists=True,
    )


def downgrade() -> None:
    op.drop_index(_INDEX, table_name="bookmarks", if_exists=True)
    metadata.drop_all(bind=op.get_bind(), checkfirst=True)
