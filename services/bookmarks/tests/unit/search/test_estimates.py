"""How many rows a tier's GIN read fetches, from PostgreSQL's statistics (search/estimates.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bookmarks.search.estimates import LexemeCounts, TierCounts, counts_of, term_rows, tier_rows, window_matches
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
