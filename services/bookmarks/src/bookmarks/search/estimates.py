"""How many rows a tier's GIN read would fetch, estimated from PostgreSQL's own statistics of the search
indexes (``pg_stats``: the most common lexemes of each vector and their frequencies), so that a page
reads a tier with few matches from its GIN index at once and walks the newest rows only for a tier with
many (docs/decisions/0160-windows-where-they-fill.md).

A GIN read costs what its matches cost, in the whole table (every owner's rows), and a window costs what
its rows cost whatever the word. ANALYZE keeps the most common lexemes of a sample with their
frequencies and the least frequency among them: a lexeme it does not keep is rarer than that. It keeps
the most common domains the same way, which size a ``domain:`` filter's window.
"""

from __future__ import annotations

import math
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

# The column a ``domain:`` filter tests.
_DOMAIN_COLUMN: Final = (bookmarks.name, bookmarks.c.domain.name)

_pg_stats = sa.table(
    "pg_stats",
    sa.column("schemaname"),
    sa.column("tablename"),
    sa.column("attname"),
    sa.column("most_common_elems"),
    sa.column("most_common_elem_freqs"),
    sa.column("most_common_vals"),
    sa.column("most_common_freqs"),
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
class DomainCounts:
    """The domain column's statistics: the share of the table's rows of each domain ANALYZE kept, and the
    least of those shares (what a domain it did not keep has at most)."""

    shares: Mapping[str, float]
    floor: float

    def share_of(self, host: str) -> float:
        """The share of rows on ``host`` or one of its subdomains: the host's own share (at most the floor
        when not kept) and those of the kept subdomains (the others are not known)."""
        suffix = "." + host
        subdomains = sum(share for domain, share in self.shares.items() if domain.endswith(suffix))
        return min(1.0, self.shares.get(host, self.floor) + subdomains)


@dataclass(frozen=True, slots=True)
class TierCounts:
    """The statistics of every tier's vector and of the domains, as read at ``read_at`` (``time.monotonic``)."""

    tiers: Mapping[float, LexemeCounts]
    read_at: float
    domains: DomainCounts | None = None


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


# The longest window a ``domain:`` filter walks, and the shortest. Testing a domain costs ~1 µs a row
# (no vector), reading a domain's rows from its index and sorting them ~4 µs a row; a domain in 1 % of
# 100,000 rows fills a page in ~2,000 of the newest and costs ~4 ms read from its index.
DOMAIN_WINDOW_MAX: Final = 4_000
DOMAIN_WINDOW_MIN: Final = 500


def domain_window(hosts: Sequence[str], counts: TierCounts, *, limit: int, pages: int) -> int | None:
    """How many of the newest rows a walk with ``domain:`` filters on ``hosts`` should look at to find
    ``pages`` pages of ``limit`` rows (the rows hold every host: at most the rarest one's share): 0 when
    that would be more than :data:`DOMAIN_WINDOW_MAX` (the domain's index is read at once), None without
    statistics or hosts."""
    if counts.domains is None or not hosts:
        return None
    share = min(counts.domains.share_of(host) for host in hosts)
    wanted = pages * limit / share if share > 0 else float("inf")
    return 0 if wanted > DOMAIN_WINDOW_MAX else max(DOMAIN_WINDOW_MIN, math.ceil(wanted))


def _statistics_statement() -> sa.Select[Any]:
    names = [sa.and_(_pg_stats.c.tablename == table, _pg_stats.c.attname == column)
             for table, column in [*_TIER_VECTORS.values(), _DOMAIN_COLUMN]]  # fmt: skip
    table = sa.func.to_regclass(bookmarks.name)
    rows = sa.select(_pg_class.c.reltuples).where(_pg_class.c.oid == table).scalar_subquery()
    return sa.select(
        _pg_stats.c.tablename,
        _pg_stats.c.attname,
        sa.cast(sa.cast(_pg_stats.c.most_common_elems, sa.Text), ARRAY(sa.Text)).label("lexemes"),
        sa.cast(_pg_stats.c.most_common_elem_freqs, ARRAY(sa.Float)).label("frequencies"),
        sa.cast(sa.cast(_pg_stats.c.most_common_vals, sa.Text), ARRAY(sa.Text)).label("values"),
        sa.cast(_pg_stats.c.most_common_freqs, ARRAY(sa.Float)).label("value_frequencies"),
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
    return TierCounts(tiers, read_at, _domains(by_vector.get(_DOMAIN_COLUMN)))


def _domains(row: Mapping[str, Any] | None) -> DomainCounts | None:
    if row is None or not row["values"] or not row["value_frequencies"]:
        return None
    shares = dict(zip(row["values"], row["value_frequencies"], strict=False))
    return DomainCounts(shares, min(shares.values()))


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


__all__ = ["DomainCounts", "LexemeCounts", "TierCounts", "counts_of", "domain_window", "tier_counts", "window_matches"]
