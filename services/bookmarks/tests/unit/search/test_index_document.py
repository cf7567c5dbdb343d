"""The pure parts of the index: language → configuration, folded tags, weighted texts."""

from __future__ import annotations

import pytest

from bookmarks.search.sql import GAP_WORD, MAX_PAGE_TEXT_CHARS, SearchDocument, config_for_language, search_tags


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
        domain="x.fr", save_why=None, notes="Notes", summary="Résumé", page_text="Texte", language="fr",
    )  # fmt: skip
    weighted = dict(doc.weighted_texts())
    assert list(weighted) == ["A", "B", "C"]
    assert weighted["A"].split() == ["economie", *[GAP_WORD] * 8, "politik", *[GAP_WORD] * 8, "a", "lire"]
    assert weighted["C"].split()[-1] == "texte" and "resume" in weighted["C"]


def test_empty_groups_are_left_out_and_page_text_is_bounded() -> None:
    doc = SearchDocument(title="  ", page_text="w" * (MAX_PAGE_TEXT_CHARS + 100))
    assert [(w, len(t)) for w, t in doc.weighted_texts()] == [("C", MAX_PAGE_TEXT_CHARS)]
    assert SearchDocument().weighted_texts() == []
