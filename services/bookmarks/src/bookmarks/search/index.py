"""The search columns of a bookmark row, written by the same statement as the row, so search
is never behind a write.

The store builds the row's statements (``store/rows.py``); :data:`SEARCH_INDEX` gives their search
columns (:class:`bookmarks.store.rows.RowIndex`), installed by ``main.py``. A write without page text (a
PUT) rebuilds the own-fields part and keeps the stored page part and language; an enrichment result
brings a new page part and language (:func:`index_values`, :func:`index_updates`). A tombstone keeps no
search data. The highlights' part is rebuilt by :func:`highlights_statement`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from pydantic_core import to_json
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.sql.elements import ColumnClause, ColumnElement
from sqlalchemy.sql.selectable import FromClause

from bookmarks.domain.model import Bookmark
from bookmarks.search.sql import (
    SIMPLE,
    SearchDocument,
    config_for_language,
    fields_vector,
    fields_vector_of,
    full_vector,
    group_texts,
    head_vector,
    head_vector_of,
    highlight_index_text,
    highlight_vector_of,
    page_vector,
    regconfig,
    search_tags,
)
from bookmarks.store.rows import PageText
from bookmarks.store.tables import bookmarks


def document_of(record: Bookmark) -> SearchDocument:
    return SearchDocument(
        title=record.title,
        tags=record.tags,
        user_tags=record.user_tags,
        description=record.description,
        url=record.url,
        domain=record.domain,
        save_why=record.save_why,
        notes=record.notes,
        summary=record.summary,
    )


def _empty() -> ColumnElement[Any]:
    return sa.cast(sa.literal(""), bookmarks.c.search_vector.type)


# A tombstone keeps no highlight search data (its highlights are deleted with it).
_NO_HIGHLIGHTS: dict[str, Any] = {"search_highlight_texts": [], "search_highlight_vector": _empty()}


def _with_stored_parts(fields: ColumnElement[Any]) -> ColumnElement[Any]:
    """``search_vector`` from new own fields and what the row keeps: its highlights' part and its page's."""
    return full_vector(fields, bookmarks.c.search_highlight_vector, bookmarks.c.search_page_vector)


def _tombstone_values() -> dict[str, Any]:
    return {"search_vector": _empty(), "search_head": _empty(), "search_tags": [],
            "search_page_text": None, "search_page_vector": _empty()} | _NO_HIGHLIGHTS  # fmt: skip


def index_values(
    record: Bookmark, page: PageText | None, page_part: ColumnElement[Any] | None = None
) -> dict[str, Any]:
    """Search column values for inserting ``record`` (with ``page`` when enrichment brought one;
    ``page_part``: its vector computed once elsewhere, see :meth:`SearchIndex.page_values`)."""
    if record.deleted_at is not None:
        return _tombstone_values()
    config = regconfig(config_for_language(page.language) if page is not None else SIMPLE)
    document = document_of(record)
    if page_part is None and page is not None:
        page_part = page_vector(page.text, config)
    values = {
        "search_tags": search_tags(record.tags, record.user_tags),
        "search_head": head_vector(document, config),
        "search_vector": full_vector(fields_vector(document, config), page=page_part),
    }
    if page is not None:
        values |= {"search_config": config, "search_page_text": page.text, "search_page_vector": page_part}
    return values


def index_updates(record: Bookmark, page: PageText | None, excluded: Any) -> dict[str, Any]:
    """``ON CONFLICT DO UPDATE SET`` values: the stored page part and language stay unless ``page``; the
    stored highlights' part stays (rebuilt in the page's language by the caller when it has highlights)."""
    values = index_values(record, page)
    if record.deleted_at is not None:
        return {name: excluded[name] for name in values}
    if page is not None:
        config = regconfig(config_for_language(page.language))
        fields = fields_vector(document_of(record), config)
        return {name: excluded[name] for name in values} | {
            "search_vector": full_vector(fields, bookmarks.c.search_highlight_vector, excluded.search_page_vector)
        }
    config = bookmarks.c.search_config
    document = document_of(record)
    return {
        "search_tags": excluded.search_tags,
        "search_head": head_vector(document, config),
        "search_vector": _with_stored_parts(fields_vector(document, config)),
    }


# --- the hot path: bound parameters, one statement shape (store/rows.py) --------------------------
#
# A PUT or DELETE writes no page text: its search columns are bound as ``search_a``/``search_b``/
# ``search_c`` (folded field texts) and ``search_tags``, besides every column of the record.

_TEXT_PARAMS = ("search_a", "search_b", "search_c")
_A, _B, _C = (sa.bindparam(n, type_=sa.Text) for n in _TEXT_PARAMS)


class SearchIndex:
    """The search columns of the bookmark row (:class:`bookmarks.store.rows.RowIndex`)."""

    def insert_values(self, tombstone: bool) -> dict[str, Any]:
        if tombstone:
            return _tombstone_values()
        simple = regconfig(SIMPLE)
        return {
            "search_tags": sa.bindparam("search_tags", type_=bookmarks.c.search_tags.type),
            "search_head": head_vector_of(simple, _A),
            "search_vector": full_vector(fields_vector_of(simple, _A, _B, _C)),
        }

    def conflict_updates(self, tombstone: bool, excluded: Any) -> dict[str, Any]:
        if tombstone:
            return {}
        config = bookmarks.c.search_config  # the stored page part and language stay
        return {
            "search_head": head_vector_of(config, _A),
            "search_vector": _with_stored_parts(fields_vector_of(config, _A, _B, _C)),
        }

    def parameters(self, record: Bookmark) -> dict[str, Any]:
        if record.deleted_at is not None:
            return {}
        texts = group_texts(document_of(record))
        return {"search_a": texts["A"], "search_b": texts["B"], "search_c": texts["C"],
                "search_tags": search_tags(record.tags, record.user_tags)}  # fmt: skip

    def recordset_columns(self, tombstone: bool) -> list[ColumnClause[Any]]:
        if tombstone:
            return []
        return [*(sa.column(n, sa.Text) for n in _TEXT_PARAMS), sa.column("search_tags", bookmarks.c.search_tags.type)]

    def recordset_values(self, tombstone: bool, rows: Any) -> dict[str, Any]:
        if tombstone:
            return {"search_vector": _empty(), "search_head": _empty(),
                    "search_tags": sa.literal_column("'{}'::text[]"),
                    "search_page_text": None, "search_page_vector": _empty(),
                    "search_highlight_texts": sa.literal_column("'{}'::text[]"),
                    "search_highlight_vector": _empty()}  # fmt: skip
        a, b, c = (rows.c[n] for n in _TEXT_PARAMS)
        config = bookmarks.c.search_config
        return {
            "search_tags": rows.c.search_tags,
            "search_head": head_vector_of(config, a),
            "search_vector": _with_stored_parts(fields_vector_of(config, a, b, c)),
        }

    def recordset_insert_values(self, tombstone: bool, rows: Any) -> dict[str, Any]:
        if tombstone:
            return self.recordset_values(tombstone, rows)
        a, b, c = (rows.c[n] for n in _TEXT_PARAMS)
        simple = regconfig(SIMPLE)
        return {
            "search_tags": rows.c.search_tags,
            "search_head": head_vector_of(simple, a),
            "search_vector": full_vector(fields_vector_of(simple, a, b, c)),
        }

    def page_values(self, record: Bookmark, page: PageText) -> tuple[FromClause, dict[str, Any]]:
        """The page's vector is computed once, in a one-row subquery: it goes into both
        ``search_page_vector`` and ``search_vector``."""
        config = regconfig(config_for_language(page.language))
        page_row = sa.select(page_vector(page.text, config).label("v")).subquery("page")
        return page_row, index_values(record, page, page_row.c.v)

    def page_updates(self, record: Bookmark, page: PageText, excluded: Any) -> dict[str, Any]:
        return index_updates(record, page, excluded)

    def page_config(self, page: PageText) -> str | None:
        config = config_for_language(page.language)
        return None if config == SIMPLE else config


SEARCH_INDEX = SearchIndex()


@functools.cache
def highlights_statement() -> Any:
    """``UPDATE … FROM jsonb_to_recordset(:rows)`` of live bookmarks' highlight part (``search_h``: the
    folded text of ``search_highlight_texts``) and of the ``search_vector`` holding it; ``:owner``."""
    texts_type = bookmarks.c.search_highlight_texts.type
    extra = [sa.column("search_h", sa.Text), sa.column("search_highlight_texts", texts_type)]
    rows = (
        sa.func.jsonb_to_recordset(sa.cast(sa.bindparam("rows", type_=sa.Text), JSONB))
        .table_valued(sa.column("client_bookmark_id", sa.Text), *(sa.column(n, sa.Text) for n in _TEXT_PARAMS), *extra)
        .render_derived(name="r", with_types=True)
    )
    config = bookmarks.c.search_config
    part = highlight_vector_of(config, rows.c.search_h)
    a, b, c = (rows.c[n] for n in _TEXT_PARAMS)
    return (
        sa.update(bookmarks)
        .where(
            bookmarks.c.owner_uid == sa.bindparam("owner", type_=bookmarks.c.owner_uid.type),
            bookmarks.c.client_bookmark_id == rows.c.client_bookmark_id,
            bookmarks.c.deleted_at.is_(None),
        )
        .values(
            search_highlight_texts=rows.c.search_highlight_texts,
            search_highlight_vector=part,
            search_vector=full_vector(fields_vector_of(config, a, b, c), part, bookmarks.c.search_page_vector),
        )
    )


def highlights_rows(items: Sequence[tuple[Bookmark, Sequence[str]]]) -> str:
    """The ``rows`` parameter of :func:`highlights_statement`: each live record with the texts of
    :func:`bookmarks.search.sql.highlight_texts`, as JSON."""
    rows = []
    for record, texts in items:
        fields = group_texts(document_of(record))
        rows.append({"client_bookmark_id": record.client_bookmark_id, "search_a": fields["A"],
                     "search_b": fields["B"], "search_c": fields["C"],
                     "search_h": highlight_index_text(texts), "search_highlight_texts": list(texts)})  # fmt: skip
    return to_json(rows).decode()
