"""render_snippet(): only <mark> is markup, user text is escaped, the original spelling comes back."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bookmarks.search.snippet import (
    MAX_SNIPPET_CHARS,
    START,
    STOP,
    _Prefixes,
    headline_document,
    render_snippet,
    snippet_window,
    split_headline,
)


def _markup(snippet: str) -> list[str]:
    return re.findall(r"<[^>]*>", snippet)


def test_script_in_a_title_is_escaped() -> None:
    title = '<script>alert("x")</script> Economie & <b>you</b>'
    headline = headline_document(title).replace("economie", f"{START}economie{STOP}")
    snippet = render_snippet(headline, title)
    assert snippet == (
        "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; <mark>Economie</mark> &amp; &lt;b&gt;you&lt;/b&gt;"
    )
    assert set(_markup(snippet)) == {"<mark>", "</mark>"}


def test_the_headline_document_has_no_tag_openers() -> None:
    document = headline_document("<b>Bold</b> & <!-- c -->")
    assert "<" not in document and len(document) == len("<b>Bold</b> & <!-- c -->")


def test_without_the_original_the_folded_text_is_shown() -> None:
    assert render_snippet(f"les {START}economiques{STOP} de") == "les <mark>economiques</mark> de"


def test_original_accents_and_case_are_restored() -> None:
    original = "Les politiques ÉCONOMIQUES de la Straße"
    headline = f"politiques {START}economiques{STOP} de la {START}strasse{STOP}"
    assert render_snippet(headline, original) == "politiques <mark>ÉCONOMIQUES</mark> de la <mark>Straße</mark>"


def test_combining_marks_stay_with_their_letter() -> None:
    original = "cafe\u0301 noir"  # e + combining acute
    headline = f"{START}cafe{STOP} noir"
    assert render_snippet(headline, original) == "<mark>cafe\u0301</mark> noir"


def test_sentinels_in_user_text_cannot_inject_markup() -> None:
    evil = f"plain {START}<img src=x onerror=alert(1)>{STOP} text economie"
    document = headline_document(evil)
    assert START not in document and STOP not in document
    headline = document.replace("economie", f"{START}economie{STOP}")
    snippet = render_snippet(headline, evil)
    assert _markup(snippet) == ["<mark>", "</mark>"]
    assert "&lt;img src=x onerror=alert(1)&gt;" in snippet


def test_stray_or_nested_sentinels_are_ignored() -> None:
    headline = f"a {STOP}b {START}c {START}d{STOP} e{STOP} f"
    assert render_snippet(headline) == "a b <mark>c d</mark> e f"


@given(st.text(alphabet=["a", " ", "é", START, STOP], max_size=30))
def test_a_headline_s_segments_keep_all_its_text_and_mark_only_what_sentinels_open(headline: str) -> None:
    segments = split_headline(headline)
    assert "".join(s.text for s in segments) == headline.replace(START, "").replace(STOP, "")
    assert all(s.text for s in segments)
    if START not in headline:
        assert not any(s.marked for s in segments)


def test_unfound_fragment_falls_back_to_the_headline() -> None:
    assert render_snippet(f"{START}x{STOP}", "something else") == "<mark>x</mark>"


def test_whitespace_and_control_characters_are_tidied() -> None:
    assert render_snippet(f"\n  a\t\tb\x00\x07 \r\n {START}c{STOP}  ") == "a b <mark>c</mark>"


@pytest.mark.parametrize("filler", ["x", "&", "<", "é"])
def test_length_is_bounded_with_markup_and_entities(filler: str) -> None:
    words = " ".join([filler * 7] * 80)
    headline = f"{START}hit{STOP} {words} {START}late{STOP} {words}"
    snippet = render_snippet(headline)
    assert len(snippet) <= MAX_SNIPPET_CHARS
    assert snippet.startswith("<mark>hit</mark> ") and snippet.endswith("…")
    assert snippet.count("<mark>") == snippet.count("</mark>")
    assert not re.search(r"&[a-z]*…$", snippet)


def test_a_mark_is_never_cut_in_half() -> None:
    headline = "x" * 280 + f" {START}" + "y" * 30 + STOP
    snippet = render_snippet(headline)
    assert len(snippet) <= MAX_SNIPPET_CHARS and "<mark>" not in snippet and snippet.endswith("…")


def _naive_to_original(original: str, folded_offset: int) -> int:
    offset = 0
    for index, char in enumerate(original):
        chunk = "" if char in (START, STOP) else headline_document(char)
        if chunk and offset >= folded_offset:
            return index
        offset += len(chunk)
    return len(original)


def test_fold_map_agrees_with_folding_character_by_character() -> None:
    import random

    from bookmarks.search.snippet import _FoldMap

    alphabet = "aZ <ßﬁÉé\u0301\u0306йИΣ한①" + START + STOP
    generator = random.Random(7)
    for _ in range(300):
        original = "".join(generator.choice(alphabet) for _ in range(generator.randint(0, 30)))
        fold_map = _FoldMap(original)
        assert fold_map.document == "".join(headline_document(c) for c in original)
        for offset in range(len(fold_map.document) + 2):
            assert fold_map.to_original(offset) == _naive_to_original(original, offset), (original, offset)


def test_short_texts_are_their_own_window() -> None:
    assert snippet_window("short text", ["text"]) == "short text"


def test_the_window_surrounds_the_first_hit_and_cuts_on_spaces() -> None:
    filler = "lorem ipsum dolor sit amet " * 200
    text = filler + "Les politiques ÉCONOMIQUES de la France " + filler
    window = snippet_window(text, ["economique"], size=300)
    assert "ÉCONOMIQUES" in window and text.index(window) > 0
    assert len(window) <= 300 and not window.startswith(" ") and text[text.index(window) - 1] == " "
    assert text[text.index(window) + len(window)] == " "


def test_the_window_finds_phrases_by_their_first_word_and_falls_back_to_the_start() -> None:
    text = ("x " * 3000) + "climate change"
    assert snippet_window(text, ["climate change"], size=100).endswith("climate change")
    assert snippet_window(text, ["absent"], size=100) == text[: text.rfind(" ", 0, 100)]
    assert snippet_window(text, [], size=100).startswith("x x")


def test_a_hit_is_found_only_at_the_start_of_a_word() -> None:
    text = ("prefixpython " * 500) + "python here"
    assert "python here" in snippet_window(text, ["python"], size=60)


_ALPHABET = st.sampled_from(list("ab_ 1-é.\u0301ßX"))


@settings(max_examples=400, deadline=None)
@example(["a-b", "b"], "xa-b")  # a word starts inside a match that does not start one
@given(st.lists(st.text(_ALPHABET, min_size=1, max_size=3), min_size=1, max_size=3), st.text(_ALPHABET, max_size=40))
def test_a_word_starting_like_a_term_is_found_where_the_lookbehind_pattern_finds_it(
    prefixes: list[str], text: str
) -> None:
    """The plain search plus a check of the character before finds the same first position as one
    regular expression with a lookbehind per prefix."""
    reference = re.compile("|".join(rf"(?<!\w){re.escape(p)}" for p in prefixes)).search(text)
    assert _Prefixes(prefixes).search(text) == (reference.start() if reference else None)
