"""Search reads (docs/api-guide.md §12) over the bookmarks table: stems, one page, snippets.

Three statements per page: the query's stems (:func:`text_match`), the page (two ``LIMIT``-ed keyset
walks, :func:`bookmarks.search.sql.search_page`), and one ``SELECT`` of every result's ``ts_headline``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.model import Bookmark
from bookmarks.search.cursor import SearchPosition
from bookmarks.search.query import Query
from bookmarks.search.snippet import best_field, headline_document, render_snippet
from bookmarks.search.sql import (
    ALL_CONFIGS,
    SIMPLE,
    SearchColumns,
    TextMatch,
    headlines_statement,
    position_of,
    search_page,
    stems_statement,
)
from bookmarks.store.tables import BOOKMARK_COLUMNS, bookmarks, user_streams

COLUMNS = SearchColumns.of(bookmarks)


@dataclass(frozen=True, slots=True)
class Hit:
    record: Bookmark
    position: SearchPosition
    config: str
    page_text: str | None


async def text_match(session: AsyncSession, query: Query) -> TextMatch:
    """The tsquery texts of the query's words, with PostgreSQL's own stems in every configuration."""
    terms = TextMatch.terms(query)
    if not terms:
        return TextMatch(None, None)
    rows = (await session.execute(stems_statement(terms))).mappings().all()
    return TextMatch.build(query, rows)


async def page(
    session: AsyncSession, query: Query, match: TextMatch, *, owner: uuid.UUID, after: SearchPosition | None,
    limit: int,
) -> tuple[list[Hit], bool]:
    """Up to ``limit`` hits after ``after`` in result order, and the owner's Pro flag."""
    selected = [*BOOKMARK_COLUMNS, sa.cast(bookmarks.c.search_config, sa.Text).label("search_config"),
                bookmarks.c.search_page_text]  # fmt: skip
    inner = search_page(query, match, COLUMNS, selected, owner=owner, after=after, limit=limit).subquery("hits")
    is_pro = sa.select(user_streams.c.is_pro).where(user_streams.c.owner_uid == owner).scalar_subquery()
    statement = sa.select(inner, is_pro.label("owner_is_pro")).order_by(
        inner.c.search_rank.desc().nulls_last(), inner.c.search_sort_time.desc(), inner.c.search_id.desc()
    )
    rows = (await session.execute(statement)).all()
    hits = [
        Hit(Bookmark.from_row(row._mapping), position_of(row), row.search_config, row.search_page_text)
        for row in rows
    ]
    return hits, bool(rows[0].owner_is_pro) if rows else False


def _fields(record: Bookmark) -> list[str | None]:
    tags = ", ".join([*record.tags, *record.user_tags]) or None
    return [record.title, tags, record.description, record.summary, record.notes, record.url]


async def snippets(session: AsyncSession, query: Query, match: TextMatch, hits: Sequence[Hit]) -> list[str | None]:
    """Each hit's snippet (≤ 300 chars of safe HTML with ``<mark>``); all None for filter-only queries."""
    terms = [*query.words, *query.phrases]
    if not terms or not hits:
        return [None] * len(hits)
    texts = [best_field(_fields(h.record), h.page_text, terms) or "" for h in hits]
    configs = [h.config if h.config in ALL_CONFIGS else SIMPLE for h in hits]
    queries = [match.headline_query(c) or "" for c in configs]
    statement = headlines_statement(configs, [headline_document(t) for t in texts], queries)
    headlines = (await session.execute(statement)).scalars().all()
    return [render_snippet(h, text) if text else None for h, text in zip(headlines, texts, strict=True)]
