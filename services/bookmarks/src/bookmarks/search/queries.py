"""Search reads (docs/api-guide.md, section 12) over the bookmarks table: stems, one page, snippets.

Per page: the query's stems and the owner's Pro flag (:func:`context`); the tiers' reads (three
statements at most, :func:`_read_tiers`); one ``SELECT`` of every result's ``ts_headline``.

Each tier with words is read in two ways, cheapest first. First the owner's newest :data:`WINDOWS` rows
(a bounded walk of the newest-first index), when PostgreSQL's statistics say the window should hold a
whole page of the tier (search/estimates.py): if it does, that ends the page, found in a few
milliseconds whatever the word. Otherwise the tier has few matches, and they are read from the GIN index
and sorted, with only bitmap scans allowed (``planner_settings``, set by the window statement itself).
Every walked tier's window read is one ``UNION ALL``; the ranked tiers' GIN reads another (the middle
tier's only if the title tier leaves the page short), and the body tier's a third, only when the page is
still short.

Why not let PostgreSQL choose: it cannot estimate how many rows a word matches (a word is an OR of its
exact token and its stem in every language, and a lexeme it does not track is estimated from the least
common one it does), so for a rare word it walked the newest-first index through every row of the user
(2 s at 100,000 bookmarks). Counting the matches first from the GIN index was exact but cost 30-95 ms for
common words. Measured in bench/search.py; docs/decisions/0050-search-plans.md.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.base import Executable
from sqlalchemy.util import LRUCache

from bookmarks.domain.model import Bookmark
from bookmarks.search import estimates
from bookmarks.search.cursor import SearchPosition
from bookmarks.search.query import DomainFilter, Query
from bookmarks.search.snippet import best_field, headline_document, render_snippet
from bookmarks.search.sql import (
    ALL_CONFIGS,
    BODY_TIER,
    MID_TIER,
    SIMPLE,
    TOP_TIER,
    SearchColumns,
    TextMatch,
    TierRead,
    headlines_statement,
    planner_settings,
    position_of,
    reads_statement,
    search_plans,
    search_shape,
    search_values,
    stems_statement,
    tiers_to_read,
)
from bookmarks.store.tables import BOOKMARK_COLUMNS, bookmarks, user_streams

COLUMNS = SearchColumns.of(bookmarks)
_SELECTED = [*BOOKMARK_COLUMNS, sa.cast(bookmarks.c.search_config, sa.Text).label("search_config"),
             bookmarks.c.search_page_text, bookmarks.c.search_highlight_texts]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Hit:
    record: Bookmark
    position: SearchPosition
    config: str
    page_text: str | None
    highlight_texts: Sequence[str] = ()


@functools.cache
def _context_statement(with_terms: bool) -> sa.Select[Any]:
    """The page's first statement, built once (bound: ``owner``, and ``terms`` with terms): the owner's
    Pro flag, :func:`search_plans` for the statements after it, and with terms their stems in the
    owner's page languages only (``search_configs``; the other languages' stems cannot match any of the
    owner's rows, and each one costs every row test and GIN lookup of the page)."""
    stream = sa.select(user_streams).where(user_streams.c.owner_uid == sa.bindparam("owner"))
    columns = [stream.with_only_columns(user_streams.c.is_pro).scalar_subquery().label("is_pro"),
               search_plans().label("search_plans")]  # fmt: skip
    if not with_terms:
        return sa.select(*columns)
    configs = sa.func.coalesce(stream.with_only_columns(user_streams.c.search_configs).scalar_subquery(),
                               sa.literal([], user_streams.c.search_configs.type))  # fmt: skip
    terms = sa.bindparam("terms", type_=ARRAY(sa.Text))
    return stems_statement(terms, configs).add_columns(*columns)


async def context(conn: AsyncConnection, query: Query, owner: uuid.UUID) -> tuple[TextMatch, bool]:
    """The tsquery texts of the query's words (PostgreSQL's own stems) and the owner's Pro flag: one
    round trip, which also makes the rest of the transaction plan every statement for its values."""
    terms = TextMatch.terms(query)
    parameters: dict[str, Any] = {"owner": owner} | ({"terms": terms} if terms else {})
    rows = (await conn.execute(_context_statement(bool(terms)), parameters)).mappings().all()
    match = TextMatch.build(query, rows) if terms else TextMatch(None, None)
    return match, bool(rows[0]["is_pro"]) if rows else False


# How many of the owner's newest rows the first, bounded read of a tier looks at. Testing a row costs
# ~8-20 µs (a word is an OR of its exact token and its stems; full vectors are toasted, phrases need
# their positions), so 500 rows bound a tier with few matches to ~4-9 ms before its GIN read, and a tier
# whose matches are at least ~4 % of the rows fills a 20-result page from the window. (bench/search.py at
# 100k: with 300, common words' title tier fell below the fill rate and took the slower GIN read: p99
# +15-25 ms.) The middle tier's window is twice as long: a common word's description matches are often
# fewer than 4 % of the rows, and its GIN read (ix_bookmarks_search_ab, the A and B lexemes) costs what
# all its matches there cost.
WINDOWS: Final = {TOP_TIER: 500, MID_TIER: 1000, BODY_TIER: 500}


async def page(
    conn: AsyncConnection,
    query: Query,
    match: TextMatch,
    *,
    owner: uuid.UUID,
    after: SearchPosition | None,
    limit: int,
) -> list[Hit]:
    """Up to ``limit`` hits after ``after`` in result order (after :func:`context`, same transaction)."""
    reads = tiers_to_read(match, after)
    if reads[0][0] is None and not _reads_an_index(query):
        # Filter-only: the walk stops after a page of matches, and filters are cheap to test.
        statement, values = _statement(query, match, owner, [(None, after, None)], limit, window_reads=False)
        rows = list((await conn.execute(statement, values)).all())
    else:
        rows = await _read_tiers(conn, query, match, owner, reads, limit)
    return [
        Hit(Bookmark.from_row(row._mapping), position_of(row), row.search_config, row.search_page_text,
            row.search_highlight_texts)
        for row in rows
    ]  # fmt: skip


def _reads_an_index(query: Query) -> bool:
    """Whether a filter-only query is read like a tier, window then index: a ``domain:`` filter has its
    own index (ix_bookmarks_live_domain), and the planner, with no estimate of a domain's rows, walked the
    newest-first index through most of the library for a rare one."""
    return any(isinstance(c.filter, DomainFilter) and not c.negated for c in query.conditions)


# Statements built once per shape (``search_shape``), the most recently used kept.
_STATEMENTS: LRUCache[tuple[Any, ...], Executable] = LRUCache(128)


def _statement(
    query: Query,
    match: TextMatch,
    owner: uuid.UUID,
    reads: Sequence[TierRead],
    limit: int,
    *,
    window_reads: bool,
    middle_tier: Sequence[str] | None = None,
) -> tuple[Executable, dict[str, Any]]:
    """The statement of ``reads`` and its values (``search_values``): window reads in one ``UNION ALL``
    that also sets the bitmap-only scans for the statements after it, or GIN reads (the filter-only walk)
    in result order. Built once per shape: a search of the same shape executes the same statement object,
    whose cache key SQLAlchemy keeps, with its own values."""
    values = search_values(query, match, owner=owner, limit=limit, reads=reads, middle_tier=middle_tier)
    shape = (window_reads, search_shape(query, match, reads))
    statement = _STATEMENTS.get(shape)
    if statement is None:
        statement = _STATEMENTS[shape] = reads_statement(
            query, match, COLUMNS, _SELECTED, owner=owner, reads=reads, limit=limit, window_reads=window_reads
        )
    return statement, values


async def _read_tiers(
    conn: AsyncConnection,
    query: Query,
    match: TextMatch,
    owner: uuid.UUID,
    reads: Sequence[tuple[float | None, SearchPosition | None]],
    limit: int,
) -> list[sa.Row[Any]]:
    """Three statements at most. First every tier's window read in one ``UNION ALL``, which also turns the
    transaction's plain index and sequential scans off for the statements after it. A tier whose window
    holds a whole page ends the page (every later tier is below it); each tier before it is read from the
    GIN index: the ranked tiers in one ``UNION ALL``, then the body tier only if they leave the page short
    (its GIN read is the costly one: every row holding the words, page text included)."""
    windowed = _walks(query, match, reads, await estimates.tier_counts(conn), limit)
    found: dict[float | None, list[sa.Row[Any]]] = {tier: [] for tier, _ in reads}
    if windowed:
        statement, values = _statement(query, match, owner, windowed, limit, window_reads=True)
        for row in await conn.execute(statement, values):
            found[row.search_rank].append(row)
    else:
        await conn.execute(planner_settings(bitmap_only=True))
    from_gin: list[TierRead] = []
    last: list[sa.Row[Any]] = []
    for tier, tier_after in reads:
        if len(found[tier]) >= limit:
            last = found[tier]
            break
        from_gin.append((tier, tier_after, None))
    rows: list[sa.Row[Any]] = []
    for group in _gin_groups(from_gin):
        middle = _whole_middle_tier(from_gin, rows) if group[0][0] == BODY_TIER else None
        statement, values = _statement(query, match, owner, group, limit - len(rows), window_reads=False,
                                       middle_tier=middle)  # fmt: skip
        rows += (await conn.execute(statement, values)).all()
        if len(rows) >= limit:
            return rows
    return (rows + last)[:limit]


# A walked tier whose window is expected to hold this many pages ends the walks: the tiers below it are
# read only if it falls short, and then from their GIN indexes.
SURE_PAGES: Final = 2


def _walks(
    query: Query,
    match: TextMatch,
    reads: Sequence[tuple[float | None, SearchPosition | None]],
    counts: estimates.TierCounts,
    limit: int,
) -> list[TierRead]:
    """The window reads of a page: each tier's whose window is expected to hold a page of it
    (:func:`estimates.window_matches`; the others' GIN reads come at once; without statistics every
    tier's), down to the first whose window is expected to hold :data:`SURE_PAGES` pages. A filter-only
    read's window is its ``domain:`` filter's (:func:`_domain_window`)."""
    walks: list[TierRead] = []
    for tier, after in reads:
        if tier is None:  # a domain: filter's walk, sized to the domain's share of the rows
            window = _domain_window(query, counts, limit)
            return [(tier, after, window)] if window else []
        window = WINDOWS[tier]
        expected = estimates.window_matches(match, tier, counts, window=window)
        if window <= 0 or (expected is not None and expected < limit):
            continue
        walks.append((tier, after, window))
        if expected is not None and expected >= SURE_PAGES * limit:
            break
    return walks


def _domain_window(query: Query, counts: estimates.TierCounts, limit: int) -> int:
    """The window of a filter-only read with a ``domain:`` filter: long enough for :data:`SURE_PAGES`
    pages of its domain, none when its index is cheaper, the body tier's without statistics."""
    hosts = [c.filter.host for c in query.conditions if isinstance(c.filter, DomainFilter) and not c.negated]
    window = estimates.domain_window(hosts, counts, limit=limit, pages=SURE_PAGES)
    return WINDOWS[BODY_TIER] if window is None else window


def _whole_middle_tier(from_gin: Sequence[TierRead], ranked: Sequence[sa.Row[Any]]) -> list[str] | None:
    """The ids of every row of the middle tier, when the ranked tiers' GIN read returned all of them: it
    read that tier from its start and left the page short. None otherwise."""
    if (MID_TIER, None, None) not in from_gin:
        return None
    return [row.search_id for row in ranked if row.search_rank == MID_TIER]


def _gin_groups(reads: Sequence[TierRead]) -> list[Sequence[TierRead]]:
    """The GIN reads in result order, as statements: the ranked tiers together, the body tier apart."""
    ranked = [read for read in reads if read[0] != BODY_TIER]
    body = [read for read in reads if read[0] == BODY_TIER]
    return [group for group in (ranked, body) if group]


def _fields(hit: Hit) -> list[str | None]:
    """The fields a snippet may show, best first: a highlight's quote or note right after the notes."""
    record = hit.record
    tags = ", ".join([*record.tags, *record.user_tags]) or None
    return [record.title, tags, record.description, record.summary, record.notes, *hit.highlight_texts, record.url]


async def snippets(conn: AsyncConnection, query: Query, match: TextMatch, hits: Sequence[Hit]) -> list[str | None]:
    """Each hit's snippet (≤ 300 chars of safe HTML with ``<mark>``); all None for filter-only queries."""
    terms = [*query.words, *query.phrases]
    if not terms or not hits:
        return [None] * len(hits)
    texts = [best_field(_fields(h), h.page_text, terms) or "" for h in hits]
    configs = [h.config if h.config in ALL_CONFIGS else SIMPLE for h in hits]
    queries = [match.headline_query(c) or "" for c in configs]
    documents = [headline_document(t) for t in texts]
    parameters = {"configs": configs, "documents": documents, "queries": queries}
    headlines = (await conn.execute(headlines_statement(), parameters)).scalars().all()
    return [render_snippet(h, text) if text else None for h, text in zip(headlines, texts, strict=True)]
