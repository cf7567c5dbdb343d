"""Link previews: the shared preview cache, the re-encoded images, and each user's minute counter.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-28
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_UPGRADE = (
    """
    CREATE TABLE previews (
      normalized_url text PRIMARY KEY,
      title text,
      description text,
      site_name text,
      language text,
      canonical_url text,
      image_id text,
      favicon_id text,
      fetched_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL
    )
    """,
    "CREATE INDEX ix_previews_expires ON previews (expires_at)",
    """
    CREATE TABLE preview_images (
      id text PRIMARY KEY,
      data bytea NOT NULL,
      width integer NOT NULL,
      height integer NOT NULL,
      size_bytes integer NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )
    """,
    """
    CREATE TABLE preview_rate (
      user_id uuid PRIMARY KEY,
      window_start timestamptz NOT NULL,
      used integer NOT NULL
    )
    """,
)

_DOWNGRADE = (
    "DROP TABLE IF EXISTS preview_rate",
    "DROP TABLE IF EXISTS preview_images",
    "DROP TABLE IF EXISTS previews",
)


def upgrade() -> None:
    for statement in _UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in _DOWNGRADE:
        op.execute(statement)
