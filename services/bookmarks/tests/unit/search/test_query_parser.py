"""The query language of docs/api-guide.md, section 12: every operator, filter, bound and error."""

from __future__ import annotations

import dataclasses
from datetime import date

import pytest

from bookmarks.search.query import (
    MAX_QUERY_CHARS,
    MAX_TERMS,
    CollectionFilter,
    Condition,
    DateFilter,
    DomainFilter,
    Flag,
    FlagFilter,
    Has,
    HasFilter,
    InvalidQuery,
    LinkFilter,
    LinkHealth,
    Query,
    TagFilter,
    parse_query,
)


def test_words_phrases_and_exclusions() -> None:
    query = parse_query('Économie "Climate Change" -crypto -"hot take"')
    assert query == Query(
        words=("economie",),
        phrases=("climate change",),
        excluded_words=("crypto",),
        excluded_phrases=("hot take",),
    )
    assert query.has_text


def test_words_are_accent_and_case_folded() -> None:
    assert parse_query("STRAßE Ångström ﬁle").words == ("strasse", "angstrom", "file")


def test_typographic_quotes_delimit_phrases() -> None:
    assert parse_query("“smart quotes” „German style“").phrases == ("smart quotes", "german style")


def test_phrase_inner_whitespace_is_collapsed() -> None:
    assert parse_query('"  a   phrase  "').phrases == ("a phrase",)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tag:Python", TagFilter("python")),
        ('tag:"Two  Words"', TagFilter("two words")),
        ("tag:Café", TagFilter("cafe")),
        ("domain:Example.COM", DomainFilter("example.com")),
        ("domain:https://www.example.com:8443/some/path", DomainFilter("example.com")),
        ("domain:bücher.de", DomainFilter("xn--bcher-kva.de")),
        ("domain:docs.python.org", DomainFilter("docs.python.org")),
        ("collection:c-42", CollectionFilter("c-42")),
        ('collection:"Reading List"', CollectionFilter("Reading List")),
        ("is:favorite", FlagFilter(Flag.FAVORITE)),
        ("is:archived", FlagFilter(Flag.ARCHIVED)),
        ("is:unread", FlagFilter(Flag.UNREAD)),
        ("is:enriched", FlagFilter(Flag.ENRICHED)),
        ("is:pending", FlagFilter(Flag.PENDING)),
        ("is:failed", FlagFilter(Flag.FAILED)),
        ("is:broken", FlagFilter(Flag.BROKEN)),
        ("IS:Favorite", FlagFilter(Flag.FAVORITE)),
        ("link:ok", LinkFilter(LinkHealth.OK)),
        ("link:moved", LinkFilter(LinkHealth.MOVED)),
        ("link:gone", LinkFilter(LinkHealth.GONE)),
        ("link:blocked", LinkFilter(LinkHealth.BLOCKED)),
        ("Link:UNREACHABLE", LinkFilter(LinkHealth.UNREACHABLE)),
        ("after:2024-02-29", DateFilter("after", date(2024, 2, 29))),
        ("Before:2025-01-01", DateFilter("before", date(2025, 1, 1))),
    ],
)
def test_each_filter(text: str, expected: object) -> None:
    assert parse_query(text).conditions == (Condition(expected, negated=False),)  # type: ignore[arg-type]
    assert parse_query(f"-{text}").conditions == (Condition(expected, negated=True),)  # type: ignore[arg-type]


def test_a_query_of_only_negated_filters_is_valid_and_unranked() -> None:
    query = parse_query("-is:archived -tag:old")
    assert query.conditions == (Condition(FlagFilter(Flag.ARCHIVED), True), Condition(TagFilter("old"), True))
    assert not query.has_text


def test_only_excluded_words_is_valid_but_not_ranked() -> None:
    query = parse_query("-crypto")
    assert query.excluded_words == ("crypto",) and not query.has_text


@pytest.mark.parametrize("q", [None, "", "   ", "\t\n"])
def test_missing_empty_or_blank_q_is_rejected(q: str | None) -> None:
    with pytest.raises(InvalidQuery) as caught:
        parse_query(q)
    assert caught.value.status == 400 and caught.value.code == "invalid-request"


@pytest.mark.parametrize(
    ("q", "part"),
    [
        ("rust colour:red", "colour:red"),
        ("-Lang:fr", "-Lang:fr"),
        ("is:starred", "is:starred"),
        ("is:", "is:"),
        ("link:dead", "link:dead"),
        ("link:", "link:"),
        ("tag:", "tag:"),
        ('tag:""', 'tag:""'),
        ("after:2024-13-01", "after:2024-13-01"),
        ("before:2023-02-29", "before:2023-02-29"),
        ("after:20240101", "after:20240101"),
        ("after:2024-W01-1", "after:2024-W01-1"),
        ("after:yesterday", "after:yesterday"),
        ("domain:ftp://example.com", "domain:ftp://example.com"),
        ("domain:exa<mple>.com", "domain:exa<mple>.com"),
        ('say "hello world', '"hello world'),
        ('tag:"unfinished', '"unfinished'),
    ],
)
def test_errors_name_the_offending_part(q: str, part: str) -> None:
    with pytest.raises(InvalidQuery) as caught:
        parse_query(q)
    assert caught.value.part == part
    assert part in caught.value.message
    assert caught.value.body()["code"] == "invalid-request"


@pytest.mark.parametrize("q", ["foo\x00bar", "tag:\x00", "a \ud800"])
def test_characters_postgresql_cannot_store_are_rejected(q: str) -> None:
    with pytest.raises(InvalidQuery, match="NUL"):
        parse_query(q)


def test_other_control_characters_are_kept_in_words() -> None:
    assert parse_query("a\x01b").words == ("a\x01b",)


def test_unknown_is_value_lists_the_known_ones() -> None:
    with pytest.raises(InvalidQuery) as caught:
        parse_query("is:starred")
    assert "is:favorite" in caught.value.message and "is:failed" in caught.value.message


def test_long_offending_parts_are_shortened_in_the_message() -> None:
    with pytest.raises(InvalidQuery) as caught:
        parse_query("x:" + "y" * 150)
    assert len(caught.value.message) < 120


def test_urls_and_times_are_words_not_filters() -> None:
    assert parse_query("https://example.com/a 12:30").words == ("https://example.com/a", "12:30")


@pytest.mark.parametrize("q", ["-", "- -", "...", '""', "—", "🎉"])
def test_nothing_searchable_is_rejected(q: str) -> None:
    with pytest.raises(InvalidQuery):
        parse_query(q)


def test_punctuation_only_words_are_dropped() -> None:
    assert parse_query("rust - ... go").words == ("rust", "go")


def test_double_dash_negates_once() -> None:
    assert parse_query("--rust").excluded_words == ("-rust",)


def test_quote_ends_a_bare_word() -> None:
    query = parse_query('say"hello world"')
    assert query.words == ("say",) and query.phrases == ("hello world",)


def test_bounds() -> None:
    parse_query("a" * MAX_QUERY_CHARS)
    with pytest.raises(InvalidQuery, match="longer than"):
        parse_query("a" * (MAX_QUERY_CHARS + 1))
    parse_query(" ".join(["w"] * MAX_TERMS))
    with pytest.raises(InvalidQuery, match="more than"):
        parse_query(" ".join(["w"] * (MAX_TERMS + 1)))


def test_filter_value_is_bounded() -> None:
    with pytest.raises(InvalidQuery, match="longer than"):
        parse_query("tag:" + "t" * 201)


def test_canonical_form_ignores_case_accents_spacing_and_quote_style() -> None:
    a = parse_query("Économie  “Hot Take”   -TAG:Old is:Favorite")
    b = parse_query('economie "hot take" -tag:old IS:favorite')
    assert a.canonical() == b.canonical()
    assert a.canonical() != parse_query('economie "hot take" tag:old is:favorite').canonical()


def test_query_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        parse_query("x").words = ()  # type: ignore[misc]


def test_unknown_link_value_lists_the_known_ones() -> None:
    with pytest.raises(InvalidQuery) as caught:
        parse_query("link:broken")
    assert "link:gone" in caught.value.message and "link:unreachable" in caught.value.message


def test_link_filters_have_a_canonical_form() -> None:
    assert parse_query("-LINK:Gone is:Broken").canonical() == "-link:gone is:broken"


def test_has_highlights_and_its_negation() -> None:
    assert parse_query("has:highlights").conditions == (Condition(HasFilter(Has.HIGHLIGHTS)),)
    assert parse_query("-HAS:Highlights").conditions == (Condition(HasFilter(Has.HIGHLIGHTS), negated=True),)
    assert parse_query("-has:highlights x").canonical() == "x -has:highlights"


@pytest.mark.parametrize("q", ["has:notes", "has:", "-has:links", 'has:"high lights"'])
def test_other_has_values_are_refused(q: str) -> None:
    with pytest.raises(InvalidQuery, match="has:"):
        parse_query(q)
