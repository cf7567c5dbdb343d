"""``make wire-document-migration``: the bookmarks revision that installs the current stored-document SQL.

Each bookmark row keeps its wire document, rendered by the trigger function that
:func:`bookmarks.api.wire.document_function_sql` prints. Revisions freeze that function as text
(``NNNN_wire_document.sql``); when the Bookmark wire model changes, the latest frozen text no longer
matches (a unit test says so) and this writes the next revision: the new text next to a revision that
installs it and re-renders every row, and whose downgrade installs the previous text again.

Run it after the revision that adds the new field's column (``make migration``): the re-rendering reads
the column.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

from bookmarks.api import wire
from bookmarks.migrate import MIGRATIONS_DIR
from common.migrations import head_and_previous, next_revision_id

SQL_SUFFIX = "_wire_document.sql"

_REVISION = '''"""Stored wire documents follow the Bookmark wire model again: bookmark_wire_document() from
``{revision}{sql_suffix}`` (written by ``make wire-document-migration`` from
``bookmarks.api.wire.document_function_sql()``), every row re-rendered.

Revision ID: {revision}
Revises: {head}
Create Date: {date}
"""

from pathlib import Path

from alembic import op

revision = "{revision}"
down_revision = "{head}"
branch_labels = None
depends_on = None

FUNCTION_SQL = Path(__file__).with_name("{revision}{sql_suffix}")
PREVIOUS_FUNCTION_SQL = Path(__file__).with_name("{previous}")


def _install(function_sql: Path) -> None:
    op.get_bind().exec_driver_sql(function_sql.read_text(encoding="utf-8"))  # as written: no bind parameters
    # Render every row again: the trigger replaces whatever the statement sets.
    op.execute("UPDATE bookmarks SET wire_document = NULL")


def upgrade() -> None:
    _install(FUNCTION_SQL)


def downgrade() -> None:
    _install(PREVIOUS_FUNCTION_SQL)
'''


def latest_function_sql(migrations_dir: Path) -> Path:
    """The stored-document function the newest revision installs (ids sort as numbers: zero-padded)."""
    return sorted((migrations_dir / "versions").glob(f"*{SQL_SUFFIX}"))[-1]


def write_revision(migrations_dir: Path = MIGRATIONS_DIR) -> Path | None:
    """Write the revision and its SQL; None (nothing written) when the latest frozen text is current."""
    function_sql = wire.document_function_sql() + "\n"
    previous = latest_function_sql(migrations_dir)
    if previous.read_text(encoding="utf-8") == function_sql:
        return None
    head, _ = head_and_previous(migrations_dir)
    revision = next_revision_id(migrations_dir)
    if revision is None:
        raise ValueError(f"head {head} is not numbered; name the revision by hand")
    versions = migrations_dir / "versions"
    (versions / f"{revision}{SQL_SUFFIX}").write_text(function_sql, encoding="utf-8")
    path = versions / f"{revision}_wire_document.py"
    date = datetime.now(UTC).date().isoformat()
    text = _REVISION.format(revision=revision, head=head, date=date, previous=previous.name, sql_suffix=SQL_SUFFIX)
    path.write_text(text, encoding="utf-8")
    return path


def main() -> int:
    path = write_revision()
    if path is None:
        print(f"{latest_function_sql(MIGRATIONS_DIR).name} is the current stored-document SQL; nothing written")
    else:
        print(f"wrote {path} and its SQL: review, then run the migration tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
