"""The built-in offline analyser: extractive summary, one-sentence save_why, tags (docs/api-guide.md, section 6)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from enrichment.pipeline import Analysis, OfflineAnalyzer, PageContent, extract_page, extract_text_plain
from enrichment.pipeline.text import normalize_paragraphs, split_sentences

PAGES = Path(__file__).resolve().parents[1] / "fixtures" / "pages"


def _page(name: str) -> PageContent:
    return extract_page((PAGES / name).read_text(encoding="utf-8"), base_url="https://example.com/article")


def _content(text: str = "", **fields: str | None) -> PageContent:
    values: dict[str, str | None] = {
        "title": None,
        "description": None,
        "thumbnail_url": None,
        "language": None,
        "site_name": None,
        "canonical_url": None,
    }
    values.update(fields)
    return PageContent(text=text, **values)


def _assert_contract(analysis: Analysis, language: str | None) -> None:
    summary_sentences = split_sentences(analysis.summary, language)
    assert 2 <= len(summary_sentences) <= 4, analysis.summary
    assert len(split_sentences(analysis.save_why, language)) == 1, analysis.save_why
    assert 1 <= len(analysis.tags) <= 8
    assert all(tag == tag.lower() and tag.strip() == tag and tag for tag in analysis.tags)
    assert len(set(analysis.tags)) == len(analysis.tags)


def _assert_extractive_in_order(summary: str, text: str, language: str) -> None:
    flat = normalize_paragraphs(text).replace("\n", " ")
    positions = []
    for sentence in split_sentences(summary, language):
        assert sentence in flat, sentence
        positions.append(flat.index(sentence))
    assert positions == sorted(positions)


@pytest.mark.parametrize(
    ("name", "language", "why_marker", "expected_tag"),
    [
        ("og_article.html", "en", "Saved for its take on", "machine learning"),
        ("german_article.html", "de", "Gespeichert", "wärmepumpen"),
        ("french_article.html", "fr", "Enregistré", "apiculture urbaine"),
        ("spanish_article.html", "es", "Guardado", "energía solar"),
        ("japanese_article.html", "ja", "保存しました", "機械学習モデル"),
        ("chinese_article.html", "zh", "保存", "垃圾分类"),
    ],
)
async def test_analysis_in_the_page_language(name: str, language: str, why_marker: str, expected_tag: str) -> None:
    page = _page(name)
    assert page.language == language
    analysis = await OfflineAnalyzer().analyze(page, existing_tags=[])
    _assert_contract(analysis, language)
    _assert_extractive_in_order(analysis.summary, page.text, language)
    assert why_marker in analysis.save_why
    assert expected_tag in analysis.tags


def test_save_why_names_topics_and_site() -> None:
    analysis = OfflineAnalyzer().analyze_sync(_page("og_article.html"), existing_tags=[])
    assert analysis.save_why.startswith("Saved for its take on machine learning and ")
    assert analysis.save_why.endswith(" from Example Tech Blog.")


def test_japanese_save_why_is_one_japanese_sentence() -> None:
    analysis = OfflineAnalyzer().analyze_sync(_page("japanese_article.html"), existing_tags=[])
    assert analysis.save_why.endswith("。")
    assert analysis.save_why.count("。") == 1
    assert "機械学習モデル" in analysis.save_why


def test_existing_tag_spelling_is_reused() -> None:
    html = """<html lang="en"><head><title>Getting started with machine-learning</title></head><body><article>
      <p>Machine-learning lets computers learn patterns from examples instead of explicit rules.</p>
      <p>Every machine-learning project starts with collecting and cleaning a dataset.</p>
      <p>Neural networks are one family of machine-learning models, and they need a lot of data.</p>
      <p>Evaluating machine-learning models on held-out data shows whether they generalise.</p>
    </article></body></html>"""
    page = extract_page(html, base_url="https://example.com/ml")
    analysis = OfflineAnalyzer().analyze_sync(page, existing_tags=["machine learning", "neural network", "knitting"])
    assert analysis.tags[0] == "machine learning"
    assert "neural network" in analysis.tags
    assert "machine-learning" not in analysis.tags
    assert "neural networks" not in analysis.tags
    assert "knitting" not in analysis.tags


def test_existing_tags_rank_before_new_ones() -> None:
    analysis = OfflineAnalyzer().analyze_sync(_page("twitter_only.html"), existing_tags=["baking", "bread"])
    assert analysis.tags[:2] == ["baking", "bread"] or analysis.tags[:2] == ["bread", "baking"]
    _assert_contract(analysis, "en")


def test_page_without_text_uses_title_and_site() -> None:
    analysis = OfflineAnalyzer().analyze_sync(_page("empty_body.html"), existing_tags=[])
    _assert_contract(analysis, "en")
    assert "“Quarterly Gardening Planner”" in analysis.summary
    assert "Green Thumb" in analysis.summary
    assert any("gardening" in tag for tag in analysis.tags)


def test_short_text_is_completed_with_the_description() -> None:
    page = _page("title_meta_only.html")
    analysis = OfflineAnalyzer().analyze_sync(page, existing_tags=[])
    _assert_contract(analysis, "en")
    assert "We are open every day" in analysis.summary
    assert "Tom & Jerry's café" in analysis.summary


def test_nothing_at_all_does_not_crash() -> None:
    analysis = OfflineAnalyzer().analyze_sync(_content(), existing_tags=[])
    assert len(split_sentences(analysis.summary, "en")) == 2
    assert len(split_sentences(analysis.save_why, "en")) == 1
    assert analysis.tags == []


def test_only_a_canonical_url_still_gives_a_tag() -> None:
    analysis = OfflineAnalyzer().analyze_sync(
        _content(canonical_url="https://www.gardening-weekly.co.uk/issue/12"), existing_tags=[]
    )
    assert analysis.tags == ["gardening-weekly"]


def test_german_fallback_sentences_are_german() -> None:
    analysis = OfflineAnalyzer().analyze_sync(
        _content(title="Wärmepumpen im Altbau", language="de", site_name="Beispiel Magazin"), existing_tags=[]
    )
    assert analysis.summary == (
        "„Wärmepumpen im Altbau“ ist eine Seite auf Beispiel Magazin. "
        "Es konnte kein lesbarer Text daraus gewonnen werden."
    )
    assert analysis.save_why.startswith("Gespeichert wegen der Ausführungen zu ")
    assert any("wärmepumpen" in tag for tag in analysis.tags)


def test_plain_text_document() -> None:
    page = extract_text_plain(
        "Release notes\n\nVersion 2 fixes a crash when saving bookmarks. Sync is now twice as fast. "
        "The bookmark importer understands more browser formats.\n"
    )
    analysis = OfflineAnalyzer().analyze_sync(page, existing_tags=["bookmarks"])
    _assert_contract(analysis, "en")
    assert analysis.tags[0] == "bookmarks"


def test_long_text_summary_has_at_most_four_sentences() -> None:
    paragraph = (
        "Solar panels convert sunlight into electricity for homes. Batteries store solar energy for the night. "
        "Installers size solar panels to the roof and the household. Prices for solar panels fell again this year. "
    )
    analysis = OfflineAnalyzer().analyze_sync(_content(paragraph * 10, language="en"), existing_tags=[])
    assert 2 <= len(split_sentences(analysis.summary, "en")) <= 4
    assert "solar panels" in analysis.tags


async def test_analysis_runs_off_the_event_loop_thread() -> None:
    seen: list[int] = []

    class Recording(OfflineAnalyzer):
        def analyze_sync(self, content: PageContent, *, existing_tags: Sequence[str]) -> Analysis:
            seen.append(threading.get_ident())
            return super().analyze_sync(content, existing_tags=existing_tags)

    await Recording().analyze(_page("og_article.html"), existing_tags=[])
    assert seen and seen[0] != threading.get_ident()
