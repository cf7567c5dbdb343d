"""The bookmark row's writes: one statement stores the record's columns and the columns a feature keeps in
the same row (search's index), so those are never behind a write.

The store owns the row: the ``INSERT … ON CONFLICT`` of the record's columns, the set-based ``UPDATE``, and
the parameters of both. What search adds (``search_*`` columns, computed in PostgreSQL from folded texts)
comes through :class:`RowIndex`, which the search feature implements (``search/index.py``) and the service's
composition root installs (``main.py``, :func:`install_index`). The dependency runs feature → store: this
module imports no feature. Writing the row without an index installed is an error, never a row without
its search columns.

The hot path (a PUT or DELETE, no page text) has one statement shape per kind (live or tombstone, create or
merge), built once with bound parameters: its cache key and compiled form are computed once per process
instead of per write (they were a third of the bookmarks service's CPU per write). An enrichment result's
page text makes a statement of its own (:func:`page_statement`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import sqlalchemy as sa
from pydantic_core import to_json
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.sql.elements import ColumnClause, ColumnElement
from sqlalchemy.sql.selectable import FromClause

from bookmarks.domain.model import Bookmark
from bookmarks.store.tables import bookmarks


@dataclass(frozen=True, slots=True)
class PageText:
    """What enrichment extracted: the readable text (capped by enrichment) and its language."""

    text: str | None
    language: str | None


class RowIndex(Protocol):
    """The columns a feature keeps in the bookmark row, derived from the record (search's index)."""

    def insert_values(self, tombstone: bool) -> dict[str, Any]:
        """INSERT values of a record without page text, by bound parameters (named by :meth:`parameters`)."""

    def conflict_updates(self, tombstone: bool, excluded: Any) -> dict[str, Any]:
        """``ON CONFLICT DO UPDATE`` values of these columns that are not simply the proposed row's."""

    def parameters(self, record: Bookmark) -> dict[str, Any]:
        """The values of the bound parameters of :meth:`insert_values` (and of the recordset's columns)."""

    def recordset_columns(self, tombstone: bool) -> list[ColumnClause[Any]]:
        """The recordset's columns beyond the record's, for the set-based UPDATE."""

    def recordset_values(self, tombstone: bool, rows: Any) -> dict[str, Any]:
        """The set-based UPDATE's values of these columns, from the recordset ``rows``."""

    def recordset_insert_values(self, tombstone: bool, rows: Any) -> dict[str, Any]:
        """The set-based INSERT's values of these columns (a record without page text, as
        :meth:`insert_values`), from the recordset ``rows``."""

    def page_values(self, record: Bookmark, page: PageText) -> tuple[FromClause, dict[str, Any]]:
        """INSERT values of ``record`` with enrichment's page text: a one-row FROM clause computing what is
        used twice (selected from by the INSERT), and the values, which may refer to it."""

    def page_updates(self, record: Bookmark, page: PageText, excluded: Any) -> dict[str, Any]:
        """``ON CONFLICT DO UPDATE`` values of these columns for a write with page text."""

    def page_config(self, page: PageText) -> str | None:
        """The text search configuration ``page`` adds to its owner's (``user_streams.search_configs``);
        None when it adds none."""


_installed: list[RowIndex] = []


def install_index(index: RowIndex) -> None:
    """Make ``index`` the row's (once per process; installing the same one again changes nothing)."""
    if _installed and _installed[0] is not index:
        raise RuntimeError("the bookmark row already has an index installed")
    if not _installed:
        _installed.append(index)


def index() -> RowIndex:
    if not _installed:
        raise RuntimeError("no index installed for the bookmark row (bookmarks.main installs search's)")
    return _installed[0]


_KEYS = frozenset(c.name for c in bookmarks.primary_key.columns)
_NAMES = tuple(f.name for f in dataclasses.fields(Bookmark))


@functools.cache
def put_values(tombstone: bool) -> dict[str, Any]:
    """Every column :func:`put_statement` writes, by bound parameters (:func:`put_parameters`) and the
    index's expressions of them."""
    values: dict[str, Any] = {name: sa.bindparam(name, type_=bookmarks.c[name].type) for name in _NAMES}
    return values | index().insert_values(tombstone)


def put_statement(tombstone: bool, only_if_absent: bool = False) -> Any:
    """``INSERT … ON CONFLICT DO UPDATE`` of a record without page text (``tombstone``: a deleted one;
    ``only_if_absent``: ``ON CONFLICT DO NOTHING``, a create that must not replace a row it did not see).
    Parameters: every column of the record by its own name, plus the index's (:func:`put_parameters`)."""
    values = put_values(tombstone)
    statement = insert(bookmarks).values(values)
    if only_if_absent:
        return statement.on_conflict_do_nothing(index_elements=sorted(_KEYS))
    return statement.on_conflict_do_update(index_elements=sorted(_KEYS), set_=_replaced(statement, values, tombstone))


def _replaced(statement: Any, values: dict[str, Any], tombstone: bool) -> dict[str, Any]:
    """What the upsert ``statement`` of a record without page text (``values``) sets on conflict: every
    column proposed, the index's as it computes them from the stored page part."""
    excluded = statement.excluded
    updates: dict[str, Any] = {k: excluded[k] for k in values if k not in _KEYS}
    return updates | index().conflict_updates(tombstone, excluded)


def put_from(values: dict[str, Any], source: FromClause, *, create: bool, where: Any = None) -> Any:
    """:func:`put_statement` of a live record whose ``values`` (:func:`put_values`, some columns replaced
    by expressions over ``source``) are selected from ``source``: nothing is proposed when ``source`` has
    no row. ``create``: ``ON CONFLICT DO NOTHING``; otherwise the conflict's update, only ``where`` it
    holds."""
    proposed = sa.select(*(value.label(name) for name, value in values.items())).select_from(source)
    statement = insert(bookmarks).from_select(list(values), proposed)
    if create:
        return statement.on_conflict_do_nothing(index_elements=sorted(_KEYS))
    updates = _replaced(statement, values, False)
    return statement.on_conflict_do_update(index_elements=sorted(_KEYS), set_=updates, where=where)


def put_parameters(record: Bookmark) -> dict[str, Any]:
    """The parameters of :func:`put_statement` for ``record``."""
    return record.to_row() | index().parameters(record)


def page_statement(record: Bookmark, page: PageText, *, only_if_absent: bool = False) -> Any:
    """``INSERT … ON CONFLICT DO UPDATE`` of ``record`` with enrichment's page text (``only_if_absent`` as in
    :func:`put_statement`): the INSERT selects from the index's one-row FROM clause (:meth:`RowIndex.page_values`)."""
    values = record.to_row()
    keys = [c.name for c in bookmarks.primary_key.columns]
    source, indexed = index().page_values(record, page)
    row = values | indexed
    selected = [
        v if isinstance(v, ColumnElement) else sa.literal(v, bookmarks.c[k].type).label(k) for k, v in row.items()
    ]
    statement = insert(bookmarks).from_select(list(row), sa.select(*selected).select_from(source))
    if only_if_absent:
        return statement.on_conflict_do_nothing(index_elements=keys)
    updates = {k: statement.excluded[k] for k in values if k not in keys}
    return statement.on_conflict_do_update(
        index_elements=keys, set_=updates | index().page_updates(record, page, statement.excluded)
    )


def _recordset(tombstone: bool) -> Any:
    """``jsonb_to_recordset(:rows)``: the records and their index's parameters (:func:`many_rows`)."""
    return (
        sa.func.jsonb_to_recordset(sa.cast(sa.bindparam("rows", type_=sa.Text), JSONB))
        .table_valued(*(sa.column(n, bookmarks.c[n].type) for n in _NAMES), *index().recordset_columns(tombstone))
        .render_derived(name="r", with_types=True)
    )


@functools.cache
def insert_many_statement(tombstone: bool) -> Any:
    """``INSERT … SELECT FROM jsonb_to_recordset(:rows) ON CONFLICT DO NOTHING RETURNING`` the keys of the
    rows it inserted: the records that do not exist yet, in one set-based statement (the others are
    updated by :func:`update_many_statement`, as :func:`put_statement`'s conflict branch would)."""
    rows = _recordset(tombstone)
    values: dict[str, Any] = {n: rows.c[n] for n in _NAMES}
    values |= index().recordset_insert_values(tombstone, rows)
    selected = [v.label(k) for k, v in values.items()]
    statement = insert(bookmarks).from_select(list(values), sa.select(*selected).select_from(rows))
    keys = sorted(_KEYS)
    return statement.on_conflict_do_nothing(index_elements=keys).returning(*(bookmarks.c[k] for k in keys))


@functools.cache
def update_many_statement(tombstone: bool) -> Any:
    """``UPDATE … FROM jsonb_to_recordset(:rows)`` of existing records (the index's columns with them, as
    :func:`put_statement` does on conflict): one set-based statement for a whole batch, where an
    executemany would run the upsert once per record (bulk changes, their undo, restores)."""
    rows = _recordset(tombstone)
    values: dict[str, Any] = {n: rows.c[n] for n in _NAMES if n not in _KEYS}
    values |= index().recordset_values(tombstone, rows)
    return sa.update(bookmarks).where(*(bookmarks.c[k] == rows.c[k] for k in sorted(_KEYS))).values(values)


def many_rows(records: Sequence[Bookmark]) -> str:
    """The ``rows`` parameter of :func:`insert_many_statement` and :func:`update_many_statement`: the records
    and their index's parameters, as JSON."""
    return to_json([put_parameters(r) for r in records]).decode()
