"""Thumbnail snapshots: the page's image, fetched by the worker, stored next to the other captures.

Both snapshot tables accept the ``thumbnail`` kind. Downgrading drops stored thumbnails first, so the
older constraint can be re-created.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_UPGRADE = (
    "ALTER TABLE snapshots DROP CONSTRAINT ck_snapshots_kind",
    "ALTER TABLE snapshots ADD CONSTRAINT ck_snapshots_kind "
    "CHECK (kind IN ('html', 'screenshot', 'readable_text', 'thumbnail'))",
    "ALTER TABLE private_snapshots DROP CONSTRAINT ck_private_snapshots_kind",
    "ALTER TABLE private_snapshots ADD CONSTRAINT ck_private_snapshots_kind "
    "CHECK (kind IN ('html', 'screenshot', 'readable_text', 'thumbnail'))",
)

_DOWNGRADE = (
    "DELETE FROM snapshots WHERE kind = 'thumbnail'",
    "ALTER TABLE snapshots DROP CONSTRAINT ck_snapshots_kind",
    "ALTER TABLE snapshots ADD CONSTRAINT ck_snapshots_kind CHECK (kind IN ('html', 'screenshot', 'readable_text'))",
    "DELETE FROM private_snapshots WHERE kind = 'thumbnail'",
    "ALTER TABLE private_snapshots DROP CONSTRAINT ck_private_snapshots_kind",
    "ALTER TABLE private_snapshots ADD CONSTRAINT ck_private_snapshots_kind "
    "CHECK (kind IN ('html', 'screenshot', 'readable_text'))",
)


def upgrade() -> None:
    for statement in _UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in _DOWNGRADE:
        op.execute(statement)
