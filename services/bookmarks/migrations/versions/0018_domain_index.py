"""Search's ``domain:`` filter (docs/api-guide.md, section 12): an index of each owner's live bookmarks by
their reversed domain, so "the host or any of its subdomains" is one range of it (bookmarks.search.sql).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28
"""

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


# CONCURRENTLY: a large table keeps taking writes while the index is built.
def upgrade() -> None:
    with op.get_context().autocommit_block():
        op.execute(
            "CREATE INDEX CONCURRENTLY ix_bookmarks_live_domain "
            'ON bookmarks (owner_uid, (reverse(domain) COLLATE "C")) WHERE deleted_at IS NULL'
        )


def downgrade() -> None:
    with op.get_context().autocommit_block():
        op.execute("DROP INDEX CONCURRENTLY IF EXISTS ix_bookmarks_live_domain")
