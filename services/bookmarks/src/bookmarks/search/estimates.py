"""How many rows a tier's GIN read would fetch, estimated from PostgreSQL's own statistics of the search
indexes (``pg_stats``: the most common lexemes of each vector and their frequencies), so that a page
reads a tier with few matches from its GIN index at once and walks the newest rows only for a tier with
many (docs/decisions/0160-windows-where-they-fill.md).

A GIN read costs what its matches cost, in the whole table (every owner's rows), and a window costs what
its rows cost whatever the word. ANALYZE keeps the most common lexemes of a sample with their
frequencies and the least frequency among them: a lexeme it does not keep is rarer than that.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection

from bookmarks.search.sql import BODY_TIER, MID_TIER, STEM_TAG_SEPARATOR, TOP_TIER, TextMatch, tsquery_lexemes
from bookmarks.store.tables import SEARCH_AB_INDEX, bookmarks

# How long a process keeps the statistics it read (they change when autovacuum analyzes the table).
STATS_SECONDS: Final = 300.0

# The vector each tier's GIN read tests, as pg_stats names it: (table or index, column). PostgreSQL names
# an index's expression column after its function.
_TIER_VECTORS: Final = {
    TOP_TIER: (bookmarks.name, bookmarks.c.search_head.name),
    MID_TIER: (SEARCH_AB_INDEX.name, "ts_filter"),
    BODY_TIER: (bookmarks.name, bookmarks.c.search_vector.name),
}

_pg_stats = sa.table(
    "pg_stats",
    sa.column("schemaname"),
    sa.column("tablename"),
    sa.column("attname"),
    sa.column("most_common_elems"),
    sa.column("most_common_elem_freqs"),
)
_pg_class = sa.table("pg_class", sa.column("oid"), sa.column("reltuples"))


@dataclass(frozen=True, slots=True)
class LexemeCounts:
    """One vector's statistics: the table's rows, the frequency of each lexeme ANALYZE kept, and the least
    of those frequencies (what a lexeme it did not keep has at most)."""

    rows: float
    frequencies: Mapping[str, float]
    floor: float

    def rows_of(self, lexeme: str) -> float:
        return self.rows * self.frequencies.get(lexeme, self.floor)


@dataclass(frozen=True, slots=True)
class TierCounts:
    """The statistics of every tier's vector, as read at ``read_at`` (``time.monotonic``)."""

    tiers: Mapping[float, LexemeCounts]
    read_at: float


def term_rows(exact: str, stems: Mapping[str, Sequence[str]], counts: LexemeCounts, *, exact_only: bool) -> float:
    """At most how many rows hold a term: its exact tokens (all of them) or, unless ``exact_only``, its
    stems in any configuration (all of one configuration's)."""
    alternatives = []
    operands = tsquery_lexemes(exact)
    if operands:
        alternatives.append(min(counts.rows_of(o) for o in operands))
    for config, lexemes in ({} if exact_only else stems).items():
        if lexemes:
            alternatives.append(min(counts.rows_of(config + STEM_TAG_SEPARATOR + lexeme) for lexeme in lexemes))
    return min(counts.rows, sum(alternatives))


def tier_rows(match: TextMatch, tier: float, counts: LexemeCounts) -> float:
    """At most how many rows the tier's GIN read fetches: those holding every required term (the middle
    tier: as written)."""
    if not match.required_terms:
        return counts.rows
    exact_only = tier == MID_TIER
    return min(term_rows(exact, stems, counts, exact_only=exact_only) for exact, stems in match.required_terms)


def window_matches(match: TextMatch, tier: float, counts: TierCounts, *, window: int) -> float | None:
    """How many matches of ``tier`` a window of ``window`` rows is expected to hold: the share of the
    table's rows its GIN read would fetch, times the window. None without statistics (a table never
    analyzed)."""
    tier_counts = counts.tiers.get(tier)
    if tier_counts is None:
        return None
    return tier_rows(match, tier, tier_counts) / tier_counts.rows * window


def _statistics_statement() -> sa.Select[Any]:
    names = [sa.and_(_pg_stats.c.tablename == table, _pg_stats.c.attname == column)
             for table, column in _TIER_VECTORS.values()]  # fmt: skip
    table = sa.func.to_regclass(bookmarks.name)
    rows = sa.select(_pg_class.c.reltuples).where(_pg_class.c.oid == table).scalar_subquery()
    return sa.select(
        _pg_stats.c.tablename,
        _pg_stats.c.attname,
        sa.cast(sa.cast(_pg_stats.c.most_common_elems, sa.Text), ARRAY(sa.Text)).label("lexemes"),
        sa.cast(_pg_stats.c.most_common_elem_freqs, ARRAY(sa.Float)).label("frequencies"),
        rows.label("rows"),
    ).where(_pg_stats.c.schemaname == sa.func.current_schema(), sa.or_(*names))


def counts_of(rows: Sequence[Mapping[str, Any]], read_at: float) -> TierCounts:
    """The statistics statement's rows as counts per tier. For a tsvector, ANALYZE stores each kept
    lexeme's frequency followed by the least and the greatest of them."""
    by_vector = {(row["tablename"], row["attname"]): row for row in rows}
    tiers: dict[float, LexemeCounts] = {}
    for tier, vector in _TIER_VECTORS.items():
        row = by_vector.get(vector)
        if row is None or not row["lexemes"] or not row["rows"] or row["rows"] <= 0:
            continue
        lexemes, frequencies = row["lexemes"], row["frequencies"]
        if len(frequencies) < len(lexemes) + 2:
            continue
        tiers[tier] = LexemeCounts(
            float(row["rows"]), dict(zip(lexemes, frequencies, strict=False)), float(frequencies[len(lexemes)])
        )
    return TierCounts(tiers, read_at)


# Per database (the engine's URL): the last statistics read.
_CACHE: dict[URL, TierCounts] = {}


async def tier_counts(conn: AsyncConnection) -> TierCounts:
    """The statistics of the search vectors, read again when older than :data:`STATS_SECONDS`."""
    key = conn.engine.url
    now = time.monotonic()
    kept = _CACHE.get(key)
    if kept is not None and now - kept.read_at < STATS_SECONDS:
        return kept
    rows = (await conn.execute(_statistics_statement())).mappings().all()
    _CACHE[key] = counts = counts_of(rows, now)
    return counts


def forget_counts() -> None:
    """Drop every kept statistic (tests that analyze a table and want the next page to read them)."""
    _CACHE.clear()


__all__ = ["LexemeCounts", "TierCounts", "counts_of", "tier_counts", "window_matches"]
