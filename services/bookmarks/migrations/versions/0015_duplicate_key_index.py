"""Duplicates (docs/api-guide.md, section 14): an index of each owner's live bookmarks by their key (the
page's canonical URL, else the normalized URL), newest first.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


# CONCURRENTLY: a large table keeps taking writes while the index is built.
def upgrade() -> None:
    with op.get_context().autocommit_block():
        op.execute(
            "CREATE INDEX CONCURRENTLY ix_bookmarks_live_duplicate_key "
            "ON bookmarks (owner_uid, coalesce(canonical_url, normalized_url), updated_at DESC) WHERE deleted_at IS NULL"
        )


def downgrade() -> None:
    with op.get_context().autocommit_block():
        op.execute("DROP INDEX CONCURRENTLY IF EXISTS ix_bookmarks_live_duplicate_key")
