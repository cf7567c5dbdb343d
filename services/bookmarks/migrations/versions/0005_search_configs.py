"""Search: user_streams.search_configs, the page languages of each user's rows (docs/decisions/
0050-search-plans.md), filled from the bookmarks already indexed.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

from bookmarks.store.tables import bookmarks, user_streams

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    # 0001 creates its tables from the current definitions, so a fresh database already has the column.
    if "search_configs" not in {c["name"] for c in sa.inspect(bind).get_columns("user_streams")}:
        op.add_column("user_streams", user_streams.c.search_configs._copy())
    config = sa.cast(bookmarks.c.search_config, sa.Text)
    used = (
        sa.select(sa.func.array_agg(sa.distinct(config)))
        .where(bookmarks.c.owner_uid == user_streams.c.owner_uid, config != "simple")
        .scalar_subquery()
    )
    op.execute(sa.update(user_streams).values(search_configs=sa.func.coalesce(used, sa.text("'{}'::text[]"))))


def downgrade() -> None:
    op.drop_column("user_streams", "search_configs")
