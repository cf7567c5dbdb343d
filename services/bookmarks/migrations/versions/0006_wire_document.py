"""Stored wire documents: bookmarks.wire_document, rendered on every insert and update by a trigger, so a
delta page joins stored text instead of rendering JSON (docs/decisions/
0052-stored-delta-documents.md).

The trigger function is frozen in ``0006_wire_document.sql``, generated once by
``bookmarks.api.wire.document_function_sql()``; a unit test says when the wire plan drifts from the
latest ``*_wire_document.sql``. A change to the Bookmark wire model is then a new migration that installs
the function again from a new file and re-renders the rows, as this one does.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""

from pathlib import Path

import sqlalchemy as sa
from alembic import op

from bookmarks.store.tables import WIRE_DOCUMENT_COLUMN, bookmarks

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

FUNCTION_SQL = Path(__file__).with_name("0006_wire_document.sql")
DROP_TRIGGER = "DROP TRIGGER IF EXISTS bookmarks_wire_document ON bookmarks"
CREATE_TRIGGER = (
    "CREATE TRIGGER bookmarks_wire_document BEFORE INSERT OR UPDATE ON bookmarks "
    "FOR EACH ROW EXECUTE FUNCTION bookmark_wire_document()"
)


def upgrade() -> None:
    bind = op.get_bind()
    # 0001 creates its tables from the current definitions, so a fresh database already has the column.
    if WIRE_DOCUMENT_COLUMN not in {c["name"] for c in sa.inspect(bind).get_columns("bookmarks")}:
        op.add_column("bookmarks", sa.Column(WIRE_DOCUMENT_COLUMN, sa.Text, nullable=True))
    bind.exec_driver_sql(FUNCTION_SQL.read_text(encoding="utf-8"))  # as written: no bind parameters
    bind.exec_driver_sql(DROP_TRIGGER)
    bind.exec_driver_sql(CREATE_TRIGGER)
    # Re-render every row: the trigger replaces whatever the statement sets.
    op.execute(sa.update(bookmarks).values({WIRE_DOCUMENT_COLUMN: None}))
    op.alter_column("bookmarks", WIRE_DOCUMENT_COLUMN, nullable=False)


def downgrade() -> None:
    op.execute(DROP_TRIGGER)
    op.execute("DROP FUNCTION IF EXISTS bookmark_wire_document()")
    op.drop_column("bookmarks", WIRE_DOCUMENT_COLUMN)
