"""Initial bookmarks schema: bookmarks, user streams, deleted users, pending enrichments, infra tables.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from alembic import op

from bookmarks.store.tables import BookmarkRow, DeletedUserRow, PendingEnrichmentRow, UserStreamRow
from common.migrations import create_infra_tables

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_TABLES = (BookmarkRow, UserStreamRow, DeletedUserRow, PendingEnrichmentRow)


def upgrade() -> None:
    bind = op.get_bind()
    create_infra_tables(bind)
    for model in _TABLES:
        model.__table__.create(bind=bind, checkfirst=True)  # type: ignore[attr-defined]


def downgrade() -> None:
    bind = op.get_bind()
    for model in reversed(_TABLES):
        model.__table__.drop(bind=bind, checkfirst=True)  # type: ignore[attr-defined]
