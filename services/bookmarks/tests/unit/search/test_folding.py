"""fold(): accents and case removed the same way for the index and the query."""

from __future__ import annotations

import pytest

from bookmarks.search.folding import fold, fold_function_sql


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("Économiques", "economiques"),
        ("STRAßE", "strasse"),
        ("Ångström naïve façade", "angstrom naive facade"),
        ("ﬁle Ⅸ ①", "file ix 1"),
        ("İstanbul", "istanbul"),
        ("ΣΊΣΥΦΟΣ", "σισυφοσ"),
        ("Ｆｕｌｌｗｉｄｔｈ", "fullwidth"),
        ("plain ascii 123", "plain ascii 123"),
    ],
)
def test_fold(text: str, folded: str) -> None:
    assert fold(text) == folded


def test_fold_is_idempotent_and_character_wise() -> None:
    text = "Ça coûte 5 € — Ærøskøbing, İzmir, Straße"
    assert fold(fold(text)) == fold(text)
    assert fold(text) == "".join(fold(c) for c in text)


def test_sql_twin_is_ascii_and_immutable() -> None:
    sql = fold_function_sql()
    assert sql.isascii()
    assert "IMMUTABLE" in sql and "PARALLEL SAFE" in sql
    with pytest.raises(ValueError):
        fold_function_sql("x; drop table bookmarks")
