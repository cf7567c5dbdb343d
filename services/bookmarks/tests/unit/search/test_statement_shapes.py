"""Search statements are kept per shape: two queries share one only when their SQL is the same."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from bookmarks.search.cursor import SearchPosition
from bookmarks.search.query import parse_query
from bookmarks.search.sql import MID_TIER, TOP_TIER, TextMatch, search_shape, search_values

OWNER = uuid.uuid4()


def match_of(q: str) -> TextMatch:
    """The query's match as ``TextMatch.build`` gives it, each word its exact token and no stems."""
    query = parse_query(q)
    rows = [
        {"term": i, "config": None, "exact": f"'{t}'", "lexemes": None} for i, t in enumerate(TextMatch.terms(query))
    ]
    return TextMatch.build(query, rows)


def shape(q: str, reads: list[tuple[float | None, SearchPosition | None, int | None]] | None = None) -> object:
    return search_shape(parse_query(q), match_of(q), reads or [(TOP_TIER, None, 500)])


def test_values_change_nothing_of_the_shape() -> None:
    assert shape("python tag:rust") == shape("climate tag:go")
    assert shape("domain:a.example -is:favorite") == shape("domain:b.example -is:favorite")
    assert shape("after:2024-01-01") == shape("after:2025-06-30")
    position = SearchPosition(TOP_TIER, datetime(2025, 1, 1, tzinfo=UTC), "x")
    assert shape("python", [(TOP_TIER, position, 500)]) == shape("snake", [(TOP_TIER, position, 500)])


def test_what_changes_the_sql_changes_the_shape() -> None:
    distinct = [
        shape("python"), shape("python -snake"), shape("tag:rust"), shape("-tag:rust"), shape("is:favorite"),
        shape("is:archived"), shape("has:highlights"), shape("after:2024-01-01"), shape("before:2024-01-01"),
        shape("domain:a.example"), shape("python domain:a.example"), shape("collection:inbox"),
        shape("python", [(MID_TIER, None, 1000)]), shape("python", [(TOP_TIER, None, None)]),
    ]  # fmt: skip
    assert len(set(distinct)) == len(distinct)


def test_every_value_is_bound_by_name() -> None:
    query = parse_query("python -snake tag:rust domain:a.example before:2024-01-01")
    position = SearchPosition(MID_TIER, datetime(2025, 1, 1, tzinfo=UTC), "b-7")
    values = search_values(query, match_of("python -snake tag:rust domain:a.example before:2024-01-01"),
                           owner=OWNER, limit=21, reads=[(MID_TIER, position, 1000)])  # fmt: skip
    assert values["search_owner"] == OWNER and values["search_limit"] == 21
    assert values["search_c0"] == ["rust"]
    assert values["search_c1"] == "a.example" and values["search_c1_like"] == "%.a.example"  # words: unindexed form
    assert values["search_c2"] == datetime(2024, 1, 1, tzinfo=UTC)
    assert (values["search_mid_after_time"], values["search_mid_after_id"], values["search_mid_skip"]) == (
        position.sort_time,
        "b-7",
        999,
    )
    assert "search_required" in values and "search_excluded" in values
