"""Library model (docs/api-guide.md, section 11): bookmarks.user_tags and is_archived, the collections table.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY

from bookmarks.store.tables import CollectionRow

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _new_bookmark_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("user_tags", ARRAY(sa.Text), nullable=False, server_default=sa.text("'{}'")),
        sa.Column("is_archived", sa.Boolean, nullable=False, server_default=sa.false()),
    ]


def upgrade() -> None:
    bind = op.get_bind()
    # 0001 creates its tables from the current definitions, so a fresh database already has these.
    present = {c["name"] for c in sa.inspect(bind).get_columns("bookmarks")}
    for column in _new_bookmark_columns():
        if column.name not in present:
            op.add_column("bookmarks", column)
    CollectionRow.__table__.create(bind=bind, checkfirst=True)  # type: ignore[attr-defined]


def downgrade() -> None:
    bind = op.get_bind()
    CollectionRow.__table__.drop(bind=bind, checkfirst=True)  # type: ignore[attr-defined]
    for column in _new_bookmark_columns():
        op.drop_column("bookmarks", column.name)
