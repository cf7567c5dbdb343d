"""Search reads (docs/api-guide.md §12) over the bookmarks table: stems, one page, snippets.

Per page: the query's stems (:func:`text_match`); each tier read until the page is full; one ``SELECT``
of every result's ``ts_headline``.

Each tier with words is read in two ways, cheapest first. First the owner's newest :data:`WINDOWS` rows
(a bounded walk of the newest-first index): if they hold the tier's part of the page, that is the answer,
found in a few milliseconds whatever the word. Otherwise the tier has few matches, and they are read from
the GIN index and sorted, with only bitmap scans allowed for this statement (``planner_settings``).

Why not let PostgreSQL choose: it cannot estimate how many rows a word matches (a word is an OR of its
exact token and its stem in every language, and a lexeme it does not track is estimated from the least
common one it does), so for a rare word it walked the newest-first index through every row of the user
(2 s at 100,000 bookmarks). Counting the matches first from the GIN index was exact but cost 30-95 ms for
common words. Measured in bench/search.py; docs/decisions-made.md "Search plans".
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
    BODY_TIER,
    SIMPLE,
    TOP_TIER,
    SearchColumns,
    TextMatch,
    headlines_statement,
    planner_settings,
    position_of,
    stems_statement,
    tier_page,
    tiers_to_read,
)
from bookmarks.store.tables import BOOKMARK_COLUMNS, bookmarks, user_streams

COLUMNS = SearchColumns.of(bookmarks)
_SELECTED = [*BOOKMARK_COLUMNS, sa.cast(bookmarks.c.search_config, sa.Text).label("search_config"),
             bookmarks.c.search_page_text]  # fmt: skip


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


# How many of the owner's newest rows the first, bounded read of a tier looks at. Testing a row costs
# ~8-20 µs (a word is an OR of ~29 lexemes; full vectors are toasted, phrases need their positions), so
# 500 rows bound a tier with few matches to ~4-9 ms before its GIN read, and a tier whose matches are at
# least ~4 % of the rows fills a 20-result page from the window. (bench/search.py at 100k: with 300,
# common words' title tier fell below the fill rate and took the slower GIN read: p99 +15-25 ms.)
WINDOWS: Final = {TOP_TIER: 500, BODY_TIER: 500}


async def page(
    session: AsyncSession, query: Query, match: TextMatch, *, owner: uuid.UUID, after: SearchPosition | None,
    limit: int,
) -> tuple[list[Hit], bool]:
    """Up to ``limit`` hits after ``after`` in result order, and the owner's Pro flag."""
    rows: list[sa.Row[Any]] = []
    await session.execute(planner_settings(bitmap_only=False))
    for tier, tier_after in tiers_to_read(match, after):
        rows += await _read_tier(session, query, match, owner, tier, tier_after, limit - len(rows))
        if len(rows) >= limit:
            break
    hits = [
        Hit(Bookmark.from_row(row._mapping), position_of(row), row.search_config, row.search_page_text)
        for row in rows
    ]
    return hits, await _is_pro(session, owner) if rows else False


async def _read_tier(
    session: AsyncSession, query: Query, match: TextMatch, owner: uuid.UUID, tier: float | None,
    after: SearchPosition | None, limit: int,
) -> list[sa.Row[Any]]:
    def statement(window: int | None) -> sa.Select[Any]:
        return tier_page(query, match, COLUMNS, _SELECTED, owner=owner, tier=tier, after=after, limit=limit,
                         window=window)  # fmt: skip

    if tier is None:  # filter-only: the walk stops after a page of matches, and filters are cheap to test
        return list((await session.execute(statement(None))).all())
    if WINDOWS[tier] > 0:  # 0 turns the bounded read off
        found = list((await session.execute(statement(WINDOWS[tier]))).all())
        if len(found) >= limit:
            return found
    await session.execute(planner_settings(bitmap_only=True))
    try:
        return list((await session.execute(statement(None))).all())
    finally:
        await session.execute(planner_settings(bitmap_only=False))


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
