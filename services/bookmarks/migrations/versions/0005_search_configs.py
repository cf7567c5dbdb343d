"""Search: user_streams.search_configs, the page languages of each user's rows (docs/decisions/
0050-search-plans.md), filled from the bookmarks already indexed.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_FILL = """
UPDATE user_streams SET search_configs = coalesce(
  (SELECT array_agg(DISTINCT CAST(bookmarks.search_config AS TEXT)) FROM bookmarks
   WHERE bookmarks.owner_uid = user_streams.owner_uid AND CAST(bookmarks.search_config AS TEXT) <> 'simple'),
  '{}'::text[])
"""


def upgrade() -> None:
    op.add_column(
        "user_streams", sa.Column("search_configs", ARRAY(sa.Text), nullable=False, server_default=sa.text("'{}'"))
    )
    op.execute(_FILL)


def downgrade() -> None:
    op.drop_column("user_streams", "search_configs")
