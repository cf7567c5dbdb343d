"""Stored wire documents follow the Bookmark wire model again: bookmark_wire_document() from
``0014_wire_document.sql`` (written by ``make wire-document-migration`` from
``bookmarks.api.wire.document_function_sql()``), every row re-rendered.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-28
"""

from pathlib import Path

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

FUNCTION_SQL = Path(__file__).with_name("0014_wire_document.sql")
PREVIOUS_FUNCTION_SQL = Path(__file__).with_name("0012_wire_document.sql")


def _install(function_sql: Path) -> None:
    op.get_bind().exec_driver_sql(function_sql.read_text(encoding="utf-8"))  # as written: no bind parameters
    # Render every row again: the trigger replaces whatever the statement sets.
    op.execute("UPDATE bookmarks SET wire_document = NULL")


def upgrade() -> None:
    _install(FUNCTION_SQL)


def downgrade() -> None:
    _install(PREVIOUS_FUNCTION_SQL)
