"""Search (docs/api-guide.md, section 12): index columns on bookmarks, their indexes, and the SQL twin of fold().

The index-building functions (``search_stems``, ``search_fields_vector``, ``search_head_vector``,
``search_page_vector``) are frozen in ``0004_search_functions.sql``, the ``search_fold(text)`` function in
``0004_search_fold.sql`` (generated once by ``bookmarks.search.folding.fold_function_sql()``; a unit
test says when Python's Unicode tables drift from it).

Existing rows get empty index columns and are found again once written (any PUT or enrichment result);
there is no backfill.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from pathlib import Path

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, REGCONFIG, TSVECTOR

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

FOLD_SQL = Path(__file__).with_name("0004_search_fold.sql")
INDEX_SQL = Path(__file__).with_name("0004_search_functions.sql")
# Each function of INDEX_SQL ends its body with this (asyncpg runs one statement at a time).
_FUNCTION_END = "$f$;"
_FUNCTIONS = (
    "search_fold(text)",
    "search_fields_vector(regconfig, text, text, text)",
    "search_head_vector(regconfig, text)",
    "search_page_vector(regconfig, text)",
    "search_stems(regconfig, text)",
)
_COLUMNS = ("search_vector", "search_head", "search_config", "search_tags", "search_page_text", "search_page_vector")


def _add_columns() -> None:
    empty_vector = sa.text("''")
    op.add_column("bookmarks", sa.Column("search_vector", TSVECTOR, nullable=False, server_default=empty_vector))
    op.add_column("bookmarks", sa.Column("search_head", TSVECTOR, nullable=False, server_default=empty_vector))
    op.add_column(
        "bookmarks",
        sa.Column("search_config", REGCONFIG, nullable=False, server_default=sa.text("'simple'::regconfig")),
    )
    op.add_column("bookmarks", sa.Column("search_tags", ARRAY(sa.Text), nullable=False, server_default=sa.text("'{}'")))
    op.add_column("bookmarks", sa.Column("search_page_text", sa.Text))
    op.add_column("bookmarks", sa.Column("search_page_vector", TSVECTOR, nullable=False, server_default=empty_vector))


def _create_indexes() -> None:
    # Exact GIN lookups, and newest-first keyset walks of a user's live bookmarks.
    op.create_index("ix_bookmarks_search", "bookmarks", ["search_vector"], postgresql_using="gin")
    op.create_index("ix_bookmarks_search_head", "bookmarks", ["search_head"], postgresql_using="gin")
    op.create_index("ix_bookmarks_search_tags", "bookmarks", ["search_tags"], postgresql_using="gin")
    op.create_index(
        "ix_bookmarks_search_newest",
        "bookmarks",
        ["owner_uid", sa.text("coalesce(client_saved_at, created_at) DESC"), sa.text("client_bookmark_id DESC")],
        postgresql_where=sa.text("deleted_at IS NULL"),
    )


def upgrade() -> None:
    _add_columns()
    _create_indexes()
    bind = op.get_bind()
    bind.exec_driver_sql(FOLD_SQL.read_text(encoding="ascii"))  # as written: no bind parameters
    functions = INDEX_SQL.read_text(encoding="utf-8").split(_FUNCTION_END)
    for body in filter(str.strip, functions):
        bind.exec_driver_sql(body.strip() + _FUNCTION_END)


def downgrade() -> None:
    for function in _FUNCTIONS:
        op.execute(f"DROP FUNCTION IF EXISTS {function}")
    for name in (
        "ix_bookmarks_search",
        "ix_bookmarks_search_head",
        "ix_bookmarks_search_tags",
        "ix_bookmarks_search_newest",
    ):
        op.drop_index(name, table_name="bookmarks")
    for column in reversed(_COLUMNS):
        op.drop_column("bookmarks", column)
