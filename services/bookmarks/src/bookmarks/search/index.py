"""The search columns of a bookmark row, written by the same statement as the row, so search
is never behind a write.

:func:`index_values` gives the INSERT's values; :func:`index_updates` the ``ON CONFLICT DO UPDATE`` part.
A write without page text (a PUT) rebuilds the own-fields part and keeps the stored page part and
language; an enrichment result brings a new page part and language. A tombstone keeps no search data.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from pydantic_core import to_json
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.sql.elements import ColumnElement

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
from bookmarks.store.tables import bookmarks


@dataclass(frozen=True, slots=True)
class PageText:
    """What enrichment extracted: the readable text (capped by enrichment) and its language."""

    text: str | None
    language: str | None


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


def _stored_parts() -> ColumnElement[Any]:
    """What a write of the own fields keeps of the row's vector: its highlights' part, then its page's."""
    return sa.func.tsvector_concat(bookmarks.c.search_highlight_vector, bookmarks.c.search_page_vector)


def index_values(
    record: Bookmark, page: PageText | None, page_part: ColumnElement[Any] | None = None
) -> dict[str, Any]:
    """Search column values for inserting ``record`` (with ``page`` when enrichment brought one;
    ``page_part``: its vector computed once elsewhere, see :func:`upsert_statement`)."""
    if record.deleted_at is not None:
        return {"search_vector": _empty(), "search_head": _empty(), "search_tags": [],
                "search_page_text": None, "search_page_vector": _empty()} | _NO_HIGHLIGHTS  # fmt: skip
    config = regconfig(config_for_language(page.language) if page is not None else SIMPLE)
    document = document_of(record)
    if page_part is None:
        page_part = page_vector(page.text, config) if page is not None else _empty()
    values = {
        "search_tags": search_tags(record.tags, record.user_tags),
        "search_head": head_vector(document, config),
        "search_vector": full_vector(fields_vector(document, config), page_part),
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
        highlights_and_page = sa.func.tsvector_concat(bookmarks.c.search_highlight_vector, excluded.search_page_vector)
        return {name: excluded[name] for name in values} | {
            "search_vector": full_vector(fields_vector(document_of(record), config), highlights_and_page)
        }
    config = bookmarks.c.search_config
    document = document_of(record)
    return {
        "search_tags": excluded.search_tags,
        "search_head": head_vector(document, config),
        "search_vector": full_vector(fields_vector(document, config), _stored_parts()),
    }


def upsert_statement(record: Bookmark, page: PageText | None, *, only_if_absent: bool = False) -> Any:
    """``INSERT … ON CONFLICT DO UPDATE`` of ``record`` and its search columns: one statement
    (``only_if_absent``: ``ON CONFLICT DO NOTHING``, a create that must not replace a row it did not see).

    With page text the INSERT selects from a one-row subquery computing the page's vector once (it goes
    into both ``search_page_vector`` and ``search_vector``).
    """
    values = record.to_row()
    keys = [c.name for c in bookmarks.primary_key.columns]
    if page is None:
        statement = insert(bookmarks).values(values | index_values(record, None))
    else:
        config = regconfig(config_for_language(page.language))
        page_row = sa.select(page_vector(page.text, config).label("v")).subquery("page")
        row = values | index_values(record, page, page_row.c.v)
        selected = [
            v if isinstance(v, ColumnElement) else sa.literal(v, bookmarks.c[k].type).label(k) for k, v in row.items()
        ]
        statement = insert(bookmarks).from_select(list(row), sa.select(*selected).select_from(page_row))
    if only_if_absent:
        return statement.on_conflict_do_nothing(index_elements=keys)
    updates = {k: statement.excluded[k] for k in values if k not in keys}
    return statement.on_conflict_do_update(
        index_elements=keys, set_=updates | index_updates(record, page, statement.excluded)
    )


# --- the hot path: one statement shape, built once ---------------------------------------------------
#
# A PUT or DELETE writes no page text, so its statement has the same shape every time: built once with
# bound parameters, its cache key and compiled form are computed once per process instead of per write
# (they were a third of the bookmarks service's CPU per write). Parameters: every column of the record
# by its own name, plus ``search_a``/``search_b``/``search_c`` (folded field texts) and ``search_tags``.

_TEXT_PARAMS = ("search_a", "search_b", "search_c")


@functools.cache
def put_statement(tombstone: bool, only_if_absent: bool = False) -> Any:
    """``INSERT … ON CONFLICT DO UPDATE`` of a record without page text (``tombstone``: a deleted one;
    ``only_if_absent``: ``ON CONFLICT DO NOTHING``, as in :func:`upsert_statement`)."""
    keys = {c.name for c in bookmarks.primary_key.columns}
    names = [f.name for f in dataclasses.fields(Bookmark)]
    values: dict[str, Any] = {name: sa.bindparam(name, type_=bookmarks.c[name].type) for name in names}
    if tombstone:
        values |= {"search_vector": _empty(), "search_head": _empty(), "search_tags": [],
                   "search_page_text": None, "search_page_vector": _empty()} | _NO_HIGHLIGHTS  # fmt: skip
    else:
        a, b, c = (sa.bindparam(n, type_=sa.Text) for n in _TEXT_PARAMS)
        simple = regconfig(SIMPLE)
        values |= {
            "search_tags": sa.bindparam("search_tags", type_=bookmarks.c.search_tags.type),
            "search_head": head_vector_of(simple, a),
            "search_vector": full_vector(fields_vector_of(simple, a, b, c), _empty()),
        }
    statement = insert(bookmarks).values(values)
    if only_if_absent:
        return statement.on_conflict_do_nothing(index_elements=sorted(keys))
    excluded = statement.excluded
    updates: dict[str, Any] = {k: excluded[k] for k in values if k not in keys}
    if not tombstone:  # the stored page part and language stay
        config = bookmarks.c.search_config
        updates |= {
            "search_head": head_vector_of(config, a),
            "search_vector": full_vector(fields_vector_of(config, a, b, c), _stored_parts()),
        }
    return statement.on_conflict_do_update(index_elements=sorted(keys), set_=updates)


def put_parameters(record: Bookmark) -> dict[str, Any]:
    """The parameters of :func:`put_statement` for ``record``."""
    values = record.to_row()
    if record.deleted_at is not None:
        return values
    texts = group_texts(document_of(record))
    return values | {"search_a": texts["A"], "search_b": texts["B"], "search_c": texts["C"],
                     "search_tags": search_tags(record.tags, record.user_tags)}  # fmt: skip


@functools.cache
def update_many_statement(tombstone: bool) -> Any:
    """``UPDATE … FROM jsonb_to_recordset(:rows)`` of existing records (their search index with them, as
    :func:`put_statement` does on conflict): one set-based statement for a whole batch, where an
    executemany would run the upsert once per record (bulk changes, their undo, restores)."""
    keys = {c.name for c in bookmarks.primary_key.columns}
    names = [f.name for f in dataclasses.fields(Bookmark)]
    extra = [] if tombstone else [*(sa.column(n, sa.Text) for n in _TEXT_PARAMS),
                                  sa.column("search_tags", bookmarks.c.search_tags.type)]  # fmt: skip
    rows = (
        sa.func.jsonb_to_recordset(sa.cast(sa.bindparam("rows", type_=sa.Text), JSONB))
        .table_valued(*(sa.column(n, bookmarks.c[n].type) for n in names), *extra)
        .render_derived(name="r", with_types=True)
    )
    values: dict[str, Any] = {n: rows.c[n] for n in names if n not in keys}
    if tombstone:
        values |= {"search_vector": _empty(), "search_head": _empty(), "search_tags": sa.literal_column("'{}'::text[]"),
                   "search_page_text": None, "search_page_vector": _empty(),
                   "search_highlight_texts": sa.literal_column("'{}'::text[]"),
                   "search_highlight_vector": _empty()}  # fmt: skip
    else:
        a, b, c = (rows.c[n] for n in _TEXT_PARAMS)
        config = bookmarks.c.search_config
        values |= {
            "search_tags": rows.c.search_tags,
            "search_head": head_vector_of(config, a),
            "search_vector": full_vector(fields_vector_of(config, a, b, c), _stored_parts()),
        }
    return sa.update(bookmarks).where(*(bookmarks.c[k] == rows.c[k] for k in sorted(keys))).values(values)


def update_many_rows(records: Sequence[Bookmark]) -> str:
    """The ``rows`` parameter of :func:`update_many_statement`: the records and their search texts, as JSON."""
    return to_json([put_parameters(r) for r in records]).decode()


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
            search_vector=full_vector(
                fields_vector_of(config, a, b, c), sa.func.tsvector_concat(part, bookmarks.c.search_page_vector)
            ),
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
