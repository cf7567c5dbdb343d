"""Anchoring (bookmarks.highlights.anchoring) against the vectors every client runs too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bookmarks.highlights.anchoring import MAX_ERROR_RATIO, Anchor, Selector, anchor, anchor_all

VECTORS = Path(__file__).resolve().parents[5] / "clients" / "shared" / "vectors" / "anchoring.json"


def _vectors() -> list[dict[str, Any]]:
    return list(json.loads(VECTORS.read_text(encoding="utf-8"))["vectors"])


def _selector(highlight: dict[str, Any]) -> Selector:
    return Selector(highlight["quote"], highlight["prefix"], highlight["suffix"], highlight["start"], highlight["end"])


@pytest.mark.parametrize("vector", _vectors(), ids=lambda v: v["name"])
def test_vector(vector: dict[str, Any]) -> None:
    highlight = vector["highlight"]
    # The highlight was made on the text before: its offsets hold its quote there.
    assert vector["before"][highlight["start"] : highlight["end"]] == highlight["quote"]
    expected = vector["expected"]
    assert anchor(vector["after"], _selector(highlight)) == Anchor(
        expected["anchor"], expected["start"], expected["end"]
    )


def test_the_vectors_cover_every_kind_and_the_cases_that_matter() -> None:
    vectors = _vectors()
    assert {v["expected"]["anchor"] for v in vectors} == {"exact", "fuzzy", "orphan"}
    names = " ".join(v["name"] for v in vectors)
    for case in ("insertion before", "edit inside", "moved paragraph", "deleted passage", "context decides"):
        assert case in names


def test_anchor_all_agrees_with_anchor_one_by_one() -> None:
    vectors = [v for v in _vectors() if v["after"]]
    text = vectors[0]["after"]
    selectors = [_selector(v["highlight"]) for v in vectors]
    assert anchor_all(text, selectors) == [anchor(text, s) for s in selectors]


def test_the_error_budget_is_a_fifth_of_the_quote() -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta"
    quote = "gamma delta epsilon"  # 19 characters: 3 edits allowed
    assert int(len(quote) * MAX_ERROR_RATIO) == 3
    assert anchor(text.replace("delta", "dXXta"), Selector(quote)).kind == "fuzzy"
    assert anchor(text.replace("delta", "XXXXa"), Selector(quote)).kind == "orphan"


def test_texts_with_many_distinct_characters_still_match_approximately() -> None:
    text = "".join(chr(0x4E00 + i) for i in range(2000))
    quote = text[500:540]
    edited = text[:510] + "x" + text[511:]
    found = anchor(edited, Selector(quote, start=500, end=540))
    assert found == Anchor("fuzzy", 500, 540)


def test_a_quote_of_ideographs_beyond_the_alphabet_is_matched_exactly_only() -> None:
    text = "".join(chr(0x4E00 + i) for i in range(2000))
    quote = text[100:400]  # 300 distinct characters
    assert anchor(text, Selector(quote)) == Anchor("exact", 100, 400)
    assert anchor(text[:200] + "x" + text[201:], Selector(quote)).kind == "orphan"


def test_two_hundred_edited_quotes_in_a_long_repetitive_page_each_find_their_own_place() -> None:
    words = [f"word{i % 997}" for i in range(20_000)]
    text = " ".join(words)
    selectors = [
        Selector(" ".join(words[i : i + 8]) + "!", start=len(" ".join(words[:i]))) for i in range(0, 20_000, 100)
    ]
    found = anchor_all(text, selectors)
    # Each quote's words repeat every 997 words: the old offset picks its own occurrence (speed is
    # bench/highlights.py's to measure).
    assert all(a.kind == "fuzzy" for a in found)
    assert all(a.start is not None and abs(a.start - s.start) <= 1 for a, s in zip(found, selectors, strict=True))
