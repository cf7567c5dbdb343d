"""The trash (docs/api-guide.md, section 14): indexes of the deleted rows that still hold their state.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-28
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_IN_TRASH = "deleted_at IS NOT NULL AND url <> ''"


# CONCURRENTLY: a large table keeps taking writes while the indexes are built.
def upgrade() -> None:
    with op.get_context().autocommit_block():
        op.execute(
            "CREATE INDEX CONCURRENTLY ix_bookmarks_trash "
            f"ON bookmarks (owner_uid, deleted_at DESC, client_bookmark_id DESC) WHERE {_IN_TRASH}"
        )
        op.execute(f"CREATE INDEX CONCURRENTLY ix_bookmarks_trash_expiry ON bookmarks (deleted_at) WHERE {_IN_TRASH}")


def downgrade() -> None:
    with op.get_context().autocommit_block():
        op.execute("DROP INDEX CONCURRENTLY IF EXISTS ix_bookmarks_trash_expiry")
        op.execute("DROP INDEX CONCURRENTLY IF EXISTS ix_bookmarks_trash")
