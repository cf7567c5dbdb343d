"""The search columns of a bookmark row, written by the same statement as the row (§E3 freshness).

:func:`index_values` gives the INSERT's values; :func:`index_updates` the ``ON CONFLICT DO UPDATE`` part.
A write without page text (a PUT) rebuilds the own-fields part and keeps the stored page part and
language; an enrichment result brings a new page part and language. A tombstone keeps no search data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.sql.elements import ColumnElement

from bookmarks.domain.model import Bookmark
from bookmarks.search.sql import (
    SIMPLE,
    SearchDocument,
    config_for_language,
    fields_vector,
    full_vector,
    head_vector,
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


def index_values(
    record: Bookmark, page: PageText | None, page_part: ColumnElement[Any] | None = None
) -> dict[str, Any]:
    """Search column values for inserting ``record`` (with ``page`` when enrichment brought one;
    ``page_part``: its vector computed once elsewhere, see :func:`upsert_statement`)."""
    if record.deleted_at is not None:
        return {"search_vector": _empty(), "search_head": _empty(), "search_tags": [],
                "search_page_text": None, "search_page_vector": _empty()}  # fmt: skip
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
    """``ON CONFLICT DO UPDATE SET`` values: the stored page part and language stay unless ``page``."""
    values = index_values(record, page)
    if record.deleted_at is not None or page is not None:
        return {name: excluded[name] for name in values}
    config = bookmarks.c.search_config
    document = document_of(record)
    return {
        "search_tags": excluded.search_tags,
        "search_head": head_vector(document, config),
        "search_vector": full_vector(fields_vector(document, config), bookmarks.c.search_page_vector),
    }


def upsert_statement(record: Bookmark, page: PageText | None) -> Any:
    """``INSERT … ON CONFLICT DO UPDATE`` of ``record`` and its search columns: one statement.

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
    updates = {k: statement.excluded[k] for k in values if k not in keys}
    return statement.on_conflict_do_update(
        index_elements=keys, set_=updates | index_updates(record, page, statement.excluded)
    )
