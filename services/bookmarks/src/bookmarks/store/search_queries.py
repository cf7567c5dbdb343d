"""Search reads (docs/api-guide.md §12) over the bookmarks table: stems, one page, snippets.

Per page: the query's stems (:func:`text_match`); with words, each tier's match count up to
:data:`SPARSE_MATCHES` from the GIN indexes; each tier read (a ``LIMIT``-ed keyset walk,
:func:`bookmarks.search.sql.tier_page`) until the page is full; one ``SELECT`` of every result's
``ts_headline``.

Why the counts: PostgreSQL cannot estimate how many rows a word matches well (a word is an OR of its
exact token and its stem in every language, and a missing lexeme is estimated from the least common one
it tracks), so for a rare word it chose to walk the newest-first index, testing every row of the user,
and found nothing after 100,000 rows (2 s). A tier with fewer than :data:`SPARSE_MATCHES` matches is
read from the GIN index and sorted (only bitmap scans allowed, for this transaction); a denser one by the
walk, which finds a page of matches in a few hundred rows. Measured in bench/search.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.model import Bookmark
from bookmarks.search.cursor import SearchPosition
from bookmarks.search.query import Query
from bookmarks.search.snippet import best_field, headline_document, render_snippet
from bookmarks.search.sql import (
    ALL_CONFIGS,
    SIMPLE,
    TOP_TIER,
    SearchColumns,
    TextMatch,
    headlines_statement,
    planner_settings,
    position_of,
    stems_statement,
    tier_match_counts,
    tier_page,
    tiers_to_read,
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


SPARSE_MATCHES: Final = 2_000


async def page(
    session: AsyncSession, query: Query, match: TextMatch, *, owner: uuid.UUID, after: SearchPosition | None,
    limit: int,
) -> tuple[list[Hit], bool]:
    """Up to ``limit`` hits after ``after`` in result order, and the owner's Pro flag."""
    selected = [*BOOKMARK_COLUMNS, sa.cast(bookmarks.c.search_config, sa.Text).label("search_config"),
                bookmarks.c.search_page_text]  # fmt: skip
    sparse = await _sparse_tiers(session, match, owner)
    rows: list[sa.Row[Any]] = []
    for tier, tier_after in tiers_to_read(match, after):
        if tier is not None:
            await session.execute(planner_settings(bitmap_only=sparse[tier == TOP_TIER]))
        statement = tier_page(query, match, COLUMNS, selected, owner=owner, tier=tier, after=tier_after,
                              limit=limit - len(rows))  # fmt: skip
        rows += (await session.execute(statement)).all()
        if len(rows) >= limit:
            break
    hits = [
        Hit(Bookmark.from_row(row._mapping), position_of(row), row.search_config, row.search_page_text)
        for row in rows
    ]
    return hits, await _is_pro(session, owner) if rows else False


async def _sparse_tiers(session: AsyncSession, match: TextMatch, owner: uuid.UUID) -> dict[bool, bool]:
    """{is top tier: has fewer than SPARSE_MATCHES matches}; counted from the GIN indexes only."""
    if match.required is None:
        return {True: False, False: False}
    await session.execute(planner_settings(bitmap_only=True))
    counts = (await session.execute(tier_match_counts(match, COLUMNS, owner=owner, cap=SPARSE_MATCHES))).one()
    return {True: counts.top < SPARSE_MATCHES, False: counts.body < SPARSE_MATCHES}


async def _is_pro(session: AsyncSession, owner: uuid.UUID) -> bool:
    statement = sa.select(user_streams.c.is_pro).where(user_streams.c.owner_uid == owner)
    return bool((await session.execute(statement)).scalar())


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
