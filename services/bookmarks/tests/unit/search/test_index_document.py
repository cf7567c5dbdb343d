"""The pure parts of the index: language → configuration, folded tags, weighted texts."""

from __future__ import annotations

from pathlib import Path

import pytest

from bookmarks.search.folding import fold_function_sql
from bookmarks.search.query import parse_query
from bookmarks.search.sql import (
    GAP_WORD,
    MAX_HIGHLIGHT_TEXT_CHARS,
    MAX_PAGE_TEXT_CHARS,
    STEM_CONFIGS,
    SearchDocument,
    TextMatch,
    config_for_language,
    highlight_index_text,
    highlight_texts,
    index_functions_sql,
    page_index_text,
    search_tags,
)

MIGRATIONS = Path(__file__).resolve().parents[3] / "migrations" / "versions"


@pytest.mark.parametrize(
    ("language", "config"),
    [("fr", "french"), ("fr-CA", "french"), ("DE_at", "german"), ("nb", "norwegian"), ("en", "english"),
     ("xx", "simple"), ("", "simple"), (None, "simple"), ("zh", "simple")],
)  # fmt: skip
def test_config_for_language(language: str | None, config: str) -> None:
    assert config_for_language(language) == config


def test_search_tags_are_folded_deduplicated_and_sorted() -> None:
    assert search_tags(["Café", "News"], ["news", " Reading   List ", "  "]) == ["cafe", "news", "reading list"]


def test_weighted_texts_group_fields_by_weight_and_fold_them() -> None:
    doc = SearchDocument(
        title="Économie", tags=["Politik"], user_tags=["À lire"], description="Desc", url="https://x.fr/a",
        domain="x.fr", save_why=None, notes="Notes", summary="Résumé",
    )  # fmt: skip
    weighted = dict(doc.weighted_texts())
    assert list(weighted) == ["A", "B", "C"]
    assert weighted["A"].split() == ["economie", *[GAP_WORD] * 8, "politik", *[GAP_WORD] * 8, "a", "lire"]
    assert weighted["C"].split()[-1] == "resume" and "notes" in weighted["C"]


def test_empty_groups_are_left_out_and_page_text_is_bounded() -> None:
    assert SearchDocument(title="  ", notes="n").weighted_texts() == [("C", "n")]
    assert SearchDocument().weighted_texts() == []
    assert len(page_index_text("w" * (MAX_PAGE_TEXT_CHARS + 100))) == MAX_PAGE_TEXT_CHARS


def test_markup_like_text_is_indexed_as_words() -> None:
    assert SearchDocument(title="<script>alert(1)</script>").weighted_texts() == [("A", " script>alert(1) /script>")]


def test_the_migration_freezes_the_generated_fold_function() -> None:
    # If this fails, Python's Unicode tables changed: add a migration with the new function text.
    assert (MIGRATIONS / "0004_search_fold.sql").read_text(encoding="ascii") == fold_function_sql() + "\n"
    # Each revision freezes the functions it adds or replaces; together they are the code's.
    frozen = [
        (MIGRATIONS / f"{revision}_search_functions.sql").read_text(encoding="utf-8") for revision in ("0004", "0021")
    ]
    assert "".join(frozen) == index_functions_sql() + "\n"


def _stems_row(terms: list[str], stems: dict[str, list[str]]) -> list[dict[str, object]]:
    return [
        {"term": i, "config": config, "exact": " <-> ".join(f"'{w}'" for w in term.split()),
         "lexemes": stems.get(config, []) if " " not in term else [w[:4] for w in term.split()]}
        for i, term in enumerate(terms)
        for config in STEM_CONFIGS
    ]  # fmt: skip


def test_text_match_tags_stems_with_their_configuration_and_quotes_lexemes() -> None:
    query = parse_query('economiques "la france" -politique -"o\'brien x"')
    row = _stems_row(TextMatch.terms(query), {"french": ["econom"], "english": ["it's\\"]})
    match = TextMatch.build(query, row)
    assert match.required == (
        "( ( 'economiques' ) | ( 'english:it''s\\\\' ) | ( 'french:econom' ) ) & ( ( 'la' <-> 'france' ) )"
    )
    assert match.excluded is not None and match.excluded.startswith("( ( 'politique' ) | ( 'english:")
    assert match.excluded.endswith(" | ( ( 'o'brien' <-> 'x' ) )")  # phrases: exact tokens only, no stems


def test_filter_only_queries_have_no_text_match() -> None:
    assert TextMatch.build(parse_query("is:favorite"), []) == TextMatch(None, None)


def test_highlight_texts_keep_non_blank_pieces_up_to_the_cap() -> None:
    assert highlight_texts(["Quote one", "", "  ", "a note"]) == ["Quote one", "a note"]
    long = ["x" * 20_000, "y" * 20_000, "z"]
    kept = highlight_texts(long)
    assert [len(t) for t in kept] == [20_000, MAX_HIGHLIGHT_TEXT_CHARS - 20_000]
    assert sum(map(len, kept)) == MAX_HIGHLIGHT_TEXT_CHARS


def test_highlight_index_text_is_folded_with_gaps_between_pieces() -> None:
    text = highlight_index_text(["Économie <b>", "Note"])
    assert text.startswith("economie  b>") and text.endswith("note") and GAP_WORD in text
