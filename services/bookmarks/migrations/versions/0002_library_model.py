"""Library model (docs/api-guide.md, section 11): bookmarks.user_tags and is_archived, the collections table.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, UUID

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("bookmarks", sa.Column("user_tags", ARRAY(sa.Text), nullable=False, server_default=sa.text("'{}'")))
    op.add_column("bookmarks", sa.Column("is_archived", sa.Boolean, nullable=False, server_default=sa.text("false")))
    op.create_table(
        "collections",
        sa.Column("owner_uid", UUID(as_uuid=True), primary_key=True),
        sa.Column("collection_id", sa.Text, primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("parent_id", sa.Text),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_collections_stream", "collections", ["owner_uid", "updated_at", "collection_id"], unique=True)


def downgrade() -> None:
    op.drop_table("collections")
    op.drop_column("bookmarks", "is_archived")
    op.drop_column("bookmarks", "user_tags")
