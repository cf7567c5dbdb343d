"""Lookup by URL (docs/pairing-and-capture.md): an index of each owner's live bookmarks by normalized URL.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


# IF NOT EXISTS: 0001 creates the tables from the current models, so a fresh database has it already.
# CONCURRENTLY: a large table keeps taking writes while the index is built.
def upgrade() -> None:
    with op.get_context().autocommit_block():
        op.execute(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_bookmarks_live_url "
            "ON bookmarks (owner_uid, normalized_url, updated_at DESC) WHERE deleted_at IS NULL"
        )


def downgrade() -> None:
    with op.get_context().autocommit_block():
        op.execute("DROP INDEX CONCURRENTLY IF EXISTS ix_bookmarks_live_url")
