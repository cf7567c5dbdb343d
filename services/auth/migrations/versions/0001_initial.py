"""Initial auth schema: users, identities, settings, subscriptions, refresh tokens, signing keys, infra tables.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from alembic import op

from auth.store.tables import TABLES
from common.migrations import create_infra_tables

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    create_infra_tables(bind)
    for model in TABLES:
        model.__table__.create(bind=bind, checkfirst=True)  # type: ignore[attr-defined]


def downgrade() -> None:
    bind = op.get_bind()
    for model in reversed(TABLES):
        model.__table__.drop(bind=bind, checkfirst=True)  # type: ignore[attr-defined]
