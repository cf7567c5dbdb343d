"""Stored wire documents: bookmarks.wire_document, rendered on every insert and update by a trigger, so a
delta page joins stored text instead of rendering JSON (docs/decisions/
0052-stored-delta-documents.md).

The trigger function is frozen in ``0006_wire_document.sql``, generated once by
``bookmarks.api.wire.document_function_sql()``; a unit test says when the wire plan drifts from the
latest ``*_wire_document.sql``, and ``make wire-document-migration`` then writes the revision that
installs the function again and re-renders the rows, as this one does.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""

from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

FUNCTION_SQL = Path(__file__).with_name("0006_wire_document.sql")
CREATE_TRIGGER = (
    "CREATE TRIGGER bookmarks_wire_document BEFORE INSERT OR UPDATE ON bookmarks "
    "FOR EACH ROW EXECUTE FUNCTION bookmark_wire_document()"
)


def upgrade() -> None:
    op.add_column("bookmarks", sa.Column("wire_document", sa.Text, nullable=True))
    bind = op.get_bind()
    bind.exec_driver_sql(FUNCTION_SQL.read_text(encoding="utf-8"))  # as written: no bind parameters
    bind.exec_driver_sql(CREATE_TRIGGER)
    # Render every row: the trigger replaces whatever the statement sets.
    op.execute("UPDATE bookmarks SET wire_document = NULL")
    op.alter_column("bookmarks", "wire_document", nullable=False)


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS bookmarks_wire_document ON bookmarks")
    op.execute("DROP FUNCTION IF EXISTS bookmark_wire_document()")
    op.drop_column("bookmarks", "wire_document")
