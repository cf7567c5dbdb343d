"""Sentence splitting, whitespace and language detection used by extraction and analysis."""

from __future__ import annotations

import pytest

from enrichment.pipeline.text import (
    collapse_whitespace,
    detect_language,
    ends_sentence,
    normalize_language_code,
    normalize_paragraphs,
    split_sentences,
    truncate_at_word,
)


def test_collapse_whitespace_handles_unicode_spaces_and_invisible_characters() -> None:
    assert collapse_whitespace("  a\u00a0\u00a0b \n\t c\u200b ") == "a b c"


def test_normalize_paragraphs_keeps_line_structure_and_drops_blank_lines() -> None:
    assert normalize_paragraphs("  one   two \r\n\r\n  three\rfour  ") == "one two\nthree\nfour"


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        (
            "Dr. Smith arrived at 10 a.m. and left early. He used tools, e.g. hammers. Was it fun? Yes!",
            "en",
            ["Dr. Smith arrived at 10 a.m. and left early.", "He used tools, e.g. hammers.", "Was it fun?", "Yes!"],
        ),
        (
            "Das gilt z. B. für Altbauten. Die Studie erschien am 3. Oktober in Berlin. Sie ist kurz.",
            "de",
            ["Das gilt z. B. für Altbauten.", "Die Studie erschien am 3. Oktober in Berlin.", "Sie ist kurz."],
        ),
        (
            "Selon M. Dupont, la ville compte trois cents ruches. « Elles vont bien », dit-il.",
            "fr",
            ["Selon M. Dupont, la ville compte trois cents ruches.", "« Elles vont bien », dit-il."],
        ),
        (
            "Según la Sra. García, todo va bien. ¿Qué requisitos hay? Basta con un acuerdo.",
            "es",
            ["Según la Sra. García, todo va bien.", "¿Qué requisitos hay?", "Basta con un acuerdo."],
        ),
        (
            "機械学習は人工知能の一分野です。データから学習します！本当に？「はい」。",
            "ja",
            ["機械学習は人工知能の一分野です。", "データから学習します！", "本当に？", "「はい」。"],
        ),
        (
            "近年来，垃圾分类取得了进展。居民开始分类。",
            "zh",
            ["近年来，垃圾分类取得了进展。", "居民开始分类。"],
        ),
    ],
)
def test_split_sentences(text: str, language: str, expected: list[str]) -> None:
    assert split_sentences(text, language) == expected


def test_split_sentences_treats_lines_as_boundaries_and_keeps_urls_and_decimals_whole() -> None:
    text = "A heading\nVersion 3.14 is on example.com now. It is fast."
    assert split_sentences(text, "en") == ["A heading", "Version 3.14 is on example.com now.", "It is fast."]


def test_split_sentences_of_empty_text() -> None:
    assert split_sentences("", "en") == []
    assert split_sentences("  \n \n", None) == []


def test_ends_sentence() -> None:
    assert ends_sentence("Done.")
    assert ends_sentence("終わり。")
    assert ends_sentence("He said “yes.”")
    assert not ends_sentence("A heading")
    assert not ends_sentence("")


def test_truncate_at_word() -> None:
    assert truncate_at_word("short", 10) == "short"
    assert truncate_at_word("one two three four five", 12) == "one two…"
    # Scripts without spaces are cut mid-run rather than emptied.
    assert truncate_at_word("あ" * 30, 10) == "あ" * 9 + "…"


@pytest.mark.parametrize(
    ("value", "expected"),
    [("de-DE", "de"), ("pt_BR", "pt"), ("EN", "en"), ("fil", None), ("", None), (None, None), ("x-klingon", None)],
)
def test_normalize_language_code(value: str | None, expected: str | None) -> None:
    assert normalize_language_code(value) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The quick brown fox jumps over the lazy dog while the farmer watches from the porch.", "en"),
        ("Der schnelle braune Fuchs springt über den faulen Hund, während der Bauer zuschaut.", "de"),
        ("Le renard brun rapide saute par-dessus le chien paresseux pendant que le fermier regarde.", "fr"),
        ("機械学習は人工知能の一分野であり、データからパターンを学習する技術です。", "ja"),
    ],
)
def test_detect_language(text: str, expected: str) -> None:
    assert detect_language(text) == expected


def test_detect_language_prefers_the_declaration_for_very_short_text() -> None:
    assert detect_language("Hallo", declared="de-AT") == "de"
    assert detect_language("", declared="fr") == "fr"
    assert detect_language("", declared=None) is None


def test_detect_language_trusts_long_text_over_a_wrong_declaration() -> None:
    text = "Der schnelle braune Fuchs springt über den faulen Hund, während der Bauer zuschaut."
    assert detect_language(text, declared="en") == "de"
