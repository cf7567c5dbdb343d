"""Search (docs/api-guide.md, section 12): index columns on bookmarks, their indexes, and the SQL twin of fold().

The index-building functions (``search_stems``, ``search_fields_vector``, ``search_head_vector``,
``search_page_vector``) are frozen in ``0004_search_functions.sql``. The ``search_fold(text)`` function is frozen in ``0004_search_fold.sql`` (generated once by
``bookmarks.search.folding.fold_function_sql()``; a unit test says when Python's Unicode tables drift).

Existing rows get empty index columns and are found again once written (any PUT or enrichment result);
there is no backfill (the platform has no installed base yet).

Revision ID: 0004_search
Revises: 0002
Create Date: 2026-11-23
"""

from pathlib import Path

import sqlalchemy as sa
from alembic import op

from bookmarks.search.sql import split_functions
from bookmarks.store.tables import bookmarks

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

FOLD_SQL = Path(__file__).with_name("0004_search_fold.sql")
INDEX_SQL = Path(__file__).with_name("0004_search_functions.sql")  # bookmarks.search.sql.index_functions_sql()
_INDEXES = ("ix_bookmarks_search", "ix_bookmarks_search_head", "ix_bookmarks_search_tags", "ix_bookmarks_search_newest")


def upgrade() -> None:
    bind = op.get_bind()
    # 0001 creates its tables from the current definitions, so a fresh database already has these.
    present = {c["name"] for c in sa.inspect(bind).get_columns("bookmarks")}
    for column in bookmarks.columns:
        if column.name.startswith("search_") and column.name not in present:
            op.add_column("bookmarks", column._copy())
    for index in bookmarks.indexes:
        if index.name in _INDEXES:
            index.create(bind=bind, checkfirst=True)
    op.execute(FOLD_SQL.read_text(encoding="ascii"))
    for statement in split_functions(INDEX_SQL.read_text(encoding="utf-8")):
        op.execute(statement)


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS search_fold(text)")
    for function in (
        "search_fields_vector(regconfig, text, text, text)",
        "search_head_vector(regconfig, text)",
        "search_page_vector(regconfig, text)",
        "search_stems(regconfig, text)",
    ):
        op.execute(f"DROP FUNCTION IF EXISTS {function}")
    for name in _INDEXES:
        op.drop_index(name, table_name="bookmarks", if_exists=True)
    for column in bookmarks.columns:
        if column.name.startswith("search_"):
            op.drop_column("bookmarks", column.name)
