"""How many rows a tier's GIN read fetches, from PostgreSQL's statistics (search/estimates.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bookmarks.search.estimates import (
    DomainCounts,
    LexemeCounts,
    TierCounts,
    counts_of,
    domain_window,
    term_rows,
    tier_rows,
    window_matches,
)
from bookmarks.search.query import parse_query
from bookmarks.search.sql import BODY_TIER, MID_TIER, TOP_TIER, TextMatch, _quote_lexeme, tsquery_lexemes

COUNTS = LexemeCounts(rows=100_000, frequencies={"see": 0.01, "english:see": 0.012, "at": 0.1, "states": 0.02},
                      floor=0.001)  # fmt: skip


@given(st.lists(st.text(min_size=1), min_size=1, max_size=4))
def test_the_lexemes_of_a_tsquery_text_are_its_quoted_operands_as_written(lexemes: list[str]) -> None:
    text = " <-> ".join(_quote_lexeme(lexeme) for lexeme in lexemes)
    assert tsquery_lexemes(text) == lexemes


def test_a_term_holds_at_most_its_rarest_token_s_rows_or_any_configuration_s_stems() -> None:
    assert term_rows("'see'", {"english": ("see",)}, COUNTS, exact_only=False) == pytest.approx(2_200)
    assert term_rows("'see'", {"english": ("see",)}, COUNTS, exact_only=True) == pytest.approx(1_000)
    assert term_rows("'united' <-> 'states'", {}, COUNTS, exact_only=False) == pytest.approx(100)  # the floor
    assert term_rows("'at'", {"english": ("at",), "simple": ("at",)}, COUNTS, exact_only=False) <= 100_000


def test_every_required_term_bounds_a_tier_and_the_middle_tier_counts_exact_tokens_only() -> None:
    rows = [{"term": 0, "config": "english", "exact": "'see'", "lexemes": ["see"]},
            {"term": 1, "config": "english", "exact": "'at'", "lexemes": ["at"]}]  # fmt: skip
    match = TextMatch.build(parse_query("see at"), rows)
    assert tier_rows(match, TOP_TIER, COUNTS) == pytest.approx(2_200)
    assert tier_rows(match, MID_TIER, COUNTS) == pytest.approx(1_000)


def test_a_window_is_expected_to_hold_the_tier_s_share_of_its_rows() -> None:
    rows = [{"term": 0, "config": "english", "exact": "'at'", "lexemes": ["at"]}]
    common = TextMatch.build(parse_query("at"), rows)
    rare = TextMatch.build(parse_query("zebra"), [{"term": 0, "config": None, "exact": "'zebra'", "lexemes": None}])
    counts = TierCounts({TOP_TIER: COUNTS, MID_TIER: COUNTS}, read_at=0.0)
    assert window_matches(common, TOP_TIER, counts, window=500) == pytest.approx(50.5)  # 10 % + its stem
    assert window_matches(common, MID_TIER, counts, window=1_000) == pytest.approx(100)  # exact token: 10 %
    assert window_matches(rare, TOP_TIER, counts, window=500) == pytest.approx(0.5)  # the floor: 0.1 %
    assert window_matches(rare, BODY_TIER, counts, window=500) is None  # no statistics of that vector


def test_the_statistics_rows_become_counts_with_the_least_kept_frequency_as_floor() -> None:
    rows = [
        {"tablename": "bookmarks", "attname": "search_head", "lexemes": ["a", "b"], "frequencies": [0.5, 0.2, 0.2, 0.5],
         "rows": 1_000.0},
        {"tablename": "ix_bookmarks_search_ab", "attname": "ts_filter", "lexemes": ["a"], "frequencies": [0.5],
         "rows": 1_000.0},  # not the form ANALYZE stores: left out
        {"tablename": "bookmarks", "attname": "search_vector", "lexemes": ["a"], "frequencies": [0.5, 0.5, 0.5],
         "rows": 0.0},  # an empty table: left out
    ]  # fmt: skip
    counts = counts_of(rows, read_at=1.0)
    assert set(counts.tiers) == {TOP_TIER}
    assert counts.tiers[TOP_TIER].rows_of("b") == pytest.approx(200) and counts.tiers[TOP_TIER].rows_of("z") == 200


DOMAINS = DomainCounts({"github.com": 0.1, "docs.python.org": 0.02, "python.org": 0.01, "blog.example.org": 0.002},
                       floor=0.002)  # fmt: skip


def test_a_domain_s_share_is_its_own_and_its_kept_subdomains_and_an_unkept_one_is_at_most_the_floor() -> None:
    assert DOMAINS.share_of("python.org") == pytest.approx(0.03)
    assert DOMAINS.share_of("org") == pytest.approx(0.034)  # "org" itself is not kept: the floor, plus three
    assert DOMAINS.share_of("notpython.org") == pytest.approx(0.002)
    assert DOMAINS.share_of("github.com") == pytest.approx(0.1)


def test_a_domain_window_holds_the_pages_asked_for_within_bounds_or_is_none() -> None:
    counts = TierCounts({}, read_at=0.0, domains=DOMAINS)
    assert domain_window(["github.com"], counts, limit=21, pages=2) == 500  # 420 rows would do: the shortest
    assert domain_window(["python.org"], counts, limit=21, pages=2) == 1_400
    assert domain_window(["blog.example.org"], counts, limit=21, pages=2) == 0  # 21,000 rows: read its index
    assert domain_window(["python.org"], TierCounts({}, read_at=0.0), limit=21, pages=2) is None


def test_the_domain_column_s_statistics_become_shares_with_the_least_as_floor() -> None:
    rows = [{"tablename": "bookmarks", "attname": "domain", "lexemes": None, "frequencies": None,
             "values": ["a.example", "b.example"], "value_frequencies": [0.3, 0.05], "rows": 1_000.0}]  # fmt: skip
    domains = counts_of(rows, read_at=1.0).domains
    assert domains is not None and domains.share_of("a.example") == 0.3 and domains.floor == 0.05
    assert counts_of([], read_at=1.0).domains is None
