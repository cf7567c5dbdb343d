"""Tag normalization, spelling-insensitive identity, keyphrases and reuse of the user's existing tags."""

from __future__ import annotations

import pytest

from enrichment.pipeline.keywords import (
    Keyphrase,
    TextIndex,
    choose_tags,
    extract_keyphrases,
    normalize_tag,
    prefer_frequent_cores,
    stopwords,
    tag_key,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Machine Learning", "machine learning"),
        ("  «Deep   learning»! ", "deep learning"),
        ("C++", "c++"),
        ("C#", "c#"),
        ("Node.js", "node.js"),
        ("e-mail", "e-mail"),
        ("foo/bar_baz", "foo bar baz"),
        ("L'intelligence artificielle", "intelligence artificielle"),
        ("Wärmepumpen", "wärmepumpen"),
        ("機械学習", "機械学習"),
        ("one two three four", None),  # more than three words
        ("a" * 33, None),  # longer than 32 characters
        ("2024", None),  # no letters
        ("!!!", None),
        ("", None),
    ],
)
def test_normalize_tag(raw: str, expected: str | None) -> None:
    assert normalize_tag(raw) == expected


def test_tag_key_ignores_case_hyphens_spacing_and_plurals() -> None:
    assert tag_key("Machine-Learning", "en") == tag_key("machine learning", "en") == tag_key("machine learnings", "en")
    assert tag_key("neural networks", "en") == tag_key("Neural Network", "en")
    assert tag_key("libraries", "en") == tag_key("library", "en")
    assert tag_key("e-mail", "en") == tag_key("email", "en")
    assert tag_key("c++", "en") != tag_key("c", "en")


def test_tag_key_handles_german_plurals_when_told_the_language() -> None:
    assert tag_key("Wärmepumpen", "de") == tag_key("wärmepumpe", "de")


# Pairs the language's stemmer takes for one word: plural and singular, with and without accents.
SAME_WORD = [
    ("en", "policies", "policy"),
    ("en", "cities", "city"),
    ("en", "boxes", "box"),
    ("en", "classes", "class"),
    ("en", "networks", "network"),
    ("de", "Häuser", "Haus"),
    ("de", "Straßen", "Straße"),
    ("fr", "économiques", "économique"),
    ("fr", "villes", "ville"),
    ("es", "noticias", "noticia"),
    ("pt", "cidades", "cidade"),
    ("nl", "boeken", "boek"),
    ("sv", "städer", "stad"),
]


@pytest.mark.parametrize(("language", "plural", "singular"), SAME_WORD)
def test_plural_and_singular_share_a_key_in_their_language(language: str, plural: str, singular: str) -> None:
    assert tag_key(plural, language) == tag_key(singular, language)


# Different words that trimming a final "s" took for one: a real stemmer keeps them apart.
DIFFERENT_WORDS = [("en", "news", "new"), ("en", "atlas", "atla"), ("en", "cosmos", "cosmo"), ("en", "bias", "bia")]


@pytest.mark.parametrize(("language", "word", "other"), DIFFERENT_WORDS)
def test_different_words_keep_different_keys(language: str, word: str, other: str) -> None:
    assert tag_key(word, language) != tag_key(other, language)


@pytest.mark.parametrize("language", [None, "ja", "xx"])
@pytest.mark.parametrize(
    ("word", "other"), [("news", "new"), ("series", "sery"), ("Windows", "window"), ("ciudades", "ciudade")]
)
def test_without_a_stemmed_language_words_are_only_lowercased(language: str | None, word: str, other: str) -> None:
    # Search indexes such pages without stemming, so tags do not merge inflections there either.
    assert tag_key(word, language) == word.lower() != tag_key(other, language)


def test_a_spanish_plural_is_stemmed_not_cut() -> None:
    # "ciudades" is "ciudad" + "es": cutting the "s" made "ciudade", a word of no language.
    assert tag_key("ciudades", "es") == "ciudad"
    assert tag_key("Ciudades", "es-MX") == tag_key("ciudades", "es")


def test_stopwords_come_from_yake_per_language() -> None:
    assert "the" in stopwords("en")
    assert "und" in stopwords("de")
    assert "les" in stopwords("fr")
    assert stopwords("xx") == frozenset()  # unknown language: no stopwords rather than English ones


def test_extract_keyphrases_english() -> None:
    text = (
        "Machine learning models need training data. Machine learning teams monitor training data drift. "
        "Good training data makes machine learning models reliable."
    )
    phrases = extract_keyphrases(text, "en")
    tags = [phrase.tag for phrase in phrases]
    assert "machine learning" in tags[:3]
    assert all(tag == tag.lower() for tag in tags)
    assert len({phrase.key for phrase in phrases}) == len(phrases)


def test_extract_keyphrases_japanese_keeps_compounds_whole() -> None:
    text = (
        "機械学習モデルの運用は難しいです。機械学習モデルは学習データに依存します。"
        "学習データの品質が重要です。ディープラーニングも機械学習モデルの一種です。"
    )
    tags = [phrase.tag for phrase in extract_keyphrases(text, "ja")]
    assert "機械学習モデル" in tags
    assert "学習データ" in tags
    # YAKE's own tokenizer would split katakana at the long-vowel mark ("ディ", "プラ", "ニング").
    assert all("ニング" != tag for tag in tags)


def test_extract_keyphrases_chinese_prefers_repeated_words() -> None:
    text = "垃圾分类工作取得了进展。居民开始垃圾分类。垃圾分类的关键在于源头减量。专家认为垃圾分类需要坚持。"
    tags = [phrase.tag for phrase in extract_keyphrases(text, "zh")]
    assert tags[0] == "垃圾分类"


def test_extract_keyphrases_of_empty_text() -> None:
    assert extract_keyphrases("", "en") == []
    assert extract_keyphrases("   ", None) == []


def test_prefer_frequent_cores_replaces_one_off_phrases_by_their_repeated_part() -> None:
    text = "La energía solar crece. La energía solar vive un auge. La energía solar necesita baterías."
    phrases = [
        Keyphrase(surface="energía solar crece", tag="energía solar crece", key=tag_key("energía solar crece", "es"))
    ]
    refined = prefer_frequent_cores(phrases, TextIndex(text, "es"), "es")
    assert [phrase.tag for phrase in refined] == ["energía solar"]


def _phrases(*tags: str) -> list[Keyphrase]:
    return [Keyphrase(surface=tag, tag=tag, key=tag_key(tag, "en")) for tag in tags]


def test_choose_tags_reuses_existing_spelling_over_a_new_one() -> None:
    text = "Machine-learning systems learn from data. Our machine-learning pipeline uses Python."
    tags = choose_tags(
        _phrases("machine-learning", "pipeline", "python"),
        existing_tags=["machine learning", "gardening"],
        body=TextIndex(text, "en"),
        heading=TextIndex(""),
        language="en",
    )
    assert tags[0] == "machine learning"
    assert "machine-learning" not in tags
    assert "gardening" not in tags  # existing tags that do not fit the page are not forced in


def test_choose_tags_matches_existing_tags_ignoring_plurals_and_case() -> None:
    text = "Neural networks are everywhere. Neural networks need GPUs."
    tags = choose_tags(
        _phrases("neural networks", "gpus"),
        existing_tags=["neural network"],
        body=TextIndex(text, "en"),
        heading=TextIndex(""),
        language="en",
    )
    assert tags[0] == "neural network"
    assert "neural networks" not in tags


def test_choose_tags_includes_existing_tags_found_in_the_title_even_without_a_keyphrase() -> None:
    tags = choose_tags(
        _phrases("sourdough", "starter"),
        existing_tags=["baking"],
        body=TextIndex("Feed the starter daily."),
        heading=TextIndex("Baking sourdough at home"),
        language="en",
    )
    assert tags[0] == "baking"


def test_choose_tags_drops_redundant_parts_and_caps_the_count() -> None:
    many = [f"topic{chr(ord('a') + index)}" for index in range(20)]
    tags = choose_tags(
        _phrases("machine learning", "learning", "machine learning models", *many),
        existing_tags=[],
        body=TextIndex(""),
        heading=TextIndex(""),
        language="en",
    )
    assert tags[0] == "machine learning"
    assert "learning" not in tags
    assert "machine learning models" not in tags
    assert 1 <= len(tags) <= 8
    assert len(set(tags)) == len(tags)


def test_choose_tags_falls_back_to_given_words() -> None:
    tags = choose_tags(
        [], existing_tags=[], body=TextIndex(""), heading=TextIndex(""), fallback=["Gardening", "example"]
    )
    assert tags == ["gardening", "example"]


def test_text_index_counts_phrases_across_spellings() -> None:
    index = TextIndex("Machine-learning and machine learning and MACHINE LEARNINGS.", "en")
    assert index.count("machine learning") == 3
    assert index.count("gardening") == 0
    assert TextIndex("機械学習と機械学習").count("機械学習") == 2
