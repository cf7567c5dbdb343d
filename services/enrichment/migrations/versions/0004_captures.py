"""Page capture (docs/pairing-and-capture.md): private jobs, the captured HTML they read, private snapshots.

A captured job (``jobs.private_for``) belongs to one user: it is left out of the one-in-flight-job-per-URL
index, so it neither blocks nor serves anyone else's enqueue. Its HTML waits in ``captured_pages`` until
the job ends; its captures go to ``private_snapshots`` under the user's bookmark, never to the shared
``snapshots`` or ``results_cache``.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-27
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_IN_FLIGHT = "status IN ('pending', 'processing', 'retrying')"

# IF NOT EXISTS: 0001 creates the tables from the current models, so a fresh database has them already.
_UPGRADE = (
    "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS private_for uuid",
    "DROP INDEX IF EXISTS ux_jobs_in_flight_url",
    f"CREATE UNIQUE INDEX ux_jobs_in_flight_url ON jobs (normalized_url) WHERE {_IN_FLIGHT} AND private_for IS NULL",
    """
    CREATE TABLE IF NOT EXISTS captured_pages (
      job_id uuid PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
      user_id uuid NOT NULL,
      html bytea NOT NULL,
      title text,
      size_bytes integer NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )
    """,
    "CREATE INDEX IF NOT EXISTS ix_captured_pages_user ON captured_pages (user_id)",
    """
    CREATE TABLE IF NOT EXISTS private_snapshots (
      user_id uuid NOT NULL,
      client_bookmark_id text NOT NULL,
      kind text NOT NULL CONSTRAINT ck_private_snapshots_kind CHECK (kind IN ('html', 'screenshot', 'readable_text')),
      normalized_url text NOT NULL,
      content_type text NOT NULL,
      data bytea NOT NULL,
      size_bytes integer NOT NULL,
      job_id uuid,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (user_id, client_bookmark_id, kind)
    )
    """,
)

_DOWNGRADE = (
    "DROP TABLE IF EXISTS private_snapshots",
    "DROP TABLE IF EXISTS captured_pages",
    "DELETE FROM jobs WHERE private_for IS NOT NULL",
    "DROP INDEX IF EXISTS ux_jobs_in_flight_url",
    f"CREATE UNIQUE INDEX ux_jobs_in_flight_url ON jobs (normalized_url) WHERE {_IN_FLIGHT}",
    "ALTER TABLE jobs DROP COLUMN IF EXISTS private_for",
)


def upgrade() -> None:
    for statement in _UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in _DOWNGRADE:
        op.execute(statement)
