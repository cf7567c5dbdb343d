"""Metadata and main text extraction from fixture pages (docs/api-guide.md, section 6)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trafilatura

from enrichment.pipeline import PageContent, extract_page, extract_text_plain

PAGES = Path(__file__).resolve().parents[1] / "fixtures" / "pages"


def _page(name: str, base_url: str = "https://blog.example.com/posts/ml-in-practice") -> PageContent:
    return extract_page((PAGES / name).read_text(encoding="utf-8"), base_url=base_url)


def test_open_graph_wins_over_twitter_json_ld_and_title() -> None:
    page = _page("og_article.html")
    assert page.title == "Machine learning in practice: lessons from five years of production models"
    assert page.description == "What we learned shipping machine learning models & keeping them healthy."
    assert page.thumbnail_url == "https://blog.example.com/images/ml-cover.png"
    assert page.site_name == "Example Tech Blog"
    assert page.canonical_url == "https://blog.example.com/posts/ml-in-practice"
    assert page.language == "en"


def test_main_text_is_the_article_without_navigation() -> None:
    page = _page("og_article.html")
    assert "training data matters more than model architecture" in page.text
    assert "Archive" not in page.text
    assert "\n" in page.text  # paragraphs stay separate


def test_twitter_cards_only() -> None:
    page = _page("twitter_only.html", base_url="https://bake.example.net/guides/sourdough/index.html")
    assert page.title == "Sourdough bread for beginners"
    assert page.description == "A gentle introduction to baking sourdough bread at home."
    assert page.thumbnail_url == "https://bake.example.net/guides/img/loaf.jpg"


def test_json_ld_graph_with_referenced_image_object() -> None:
    page = _page("jsonld_graph.html", base_url="https://news.example.org/city-bikes")
    # The NewsArticle beats the generic WebPage node; entities and markup in JSON-LD strings are decoded.
    assert page.title == "City expands its bike-sharing network – 40 new stations"
    assert page.description == "The council approved 40 new stations for the bike\u2011sharing scheme."
    assert page.thumbnail_url == "https://news.example.org/media/bikes.jpg"
    assert page.site_name == "Example News"


def test_json_ld_product_with_image_list_and_a_broken_block() -> None:
    page = _page("jsonld_product.html", base_url="https://shop.example.com/p/trail-runner-3")
    assert page.title == "Trail Runner 3 hiking shoe"
    assert page.description == "Lightweight hiking shoe with a grippy sole."
    assert page.thumbnail_url == "https://shop.example.com/p/images/trail-runner.webp"


def test_title_and_meta_description_with_entities_and_whitespace() -> None:
    page = _page("title_meta_only.html")
    assert page.title == "Café & Bistro — Opening hours"
    assert page.description == "Tom & Jerry's café is open daily <from 8>."
    assert page.thumbnail_url is None


def test_base_href_applies_to_relative_urls() -> None:
    page = _page("base_href.html", base_url="https://example.com/dir/page.html")
    assert page.thumbnail_url == "https://example.com/static/v2/img/cover.png"
    assert page.canonical_url == "https://example.com/articles/base-href"


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("//cdn.example.com/a.png", "https://cdn.example.com/a.png"),
        ("  /a b.png\n", "https://example.com/a%20b.png"),
        ("javascript:alert(1)", None),
        ("data:image/png;base64,AAAA", None),
        ("", None),
    ],
)
def test_thumbnail_urls_are_absolute_http_urls_only(image: str, expected: str | None) -> None:
    html = f'<html><head><meta property="og:image" content="{image}"></head><body><p>x</p></body></html>'
    assert extract_page(html, base_url="https://example.com/x/y").thumbnail_url == expected


def test_json_ld_in_a_comment_wrapper_and_typed_with_a_url() -> None:
    html = """<html><head><script type="application/ld+json"><!--
      {"@type": "http://schema.org/BlogPosting", "headline": "Wrapped headline",
       "image": {"@type": "ImageObject", "url": "https://img.example.com/h.jpg"}}
    --></script></head><body><p>Body.</p></body></html>"""
    page = extract_page(html, base_url="https://example.com/")
    assert page.title == "Wrapped headline"
    assert page.thumbnail_url == "https://img.example.com/h.jpg"


def test_svg_title_is_not_the_page_title() -> None:
    html = "<html><body><svg><title>icon</title></svg><p>No document title here.</p></body></html>"
    assert extract_page(html, base_url="https://example.com/").title is None


def test_xml_declaration_and_nul_bytes_do_not_break_parsing() -> None:
    html = '<?xml version="1.0" encoding="UTF-8"?>\n<html><head><title>X\x00HTML</title></head><body><p>ok</p></body></html>'
    assert extract_page(html, base_url="https://example.com/").title == "XHTML"


@pytest.mark.parametrize("html", ["", "   ", "<!-- only a comment -->", "\x00"])
def test_empty_documents(html: str) -> None:
    page = extract_page(html, base_url="https://example.com/")
    assert page.title is None
    assert page.text == ""


def test_body_text_fallback_when_trafilatura_finds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trafilatura, "extract", lambda *args, **kwargs: None)
    html = """<html><head><style>p{}</style></head><body>
      <div>First <b>block</b> text.</div><script>var secret = 1;</script>
      <p hidden>Hidden text.</p><p>Second block.</p>
    </body></html>"""
    page = extract_page(html, base_url="https://example.com/")
    assert page.text == "First block text.\nSecond block."


def test_language_falls_back_to_the_html_lang_attribute_for_short_text() -> None:
    html = '<html lang="de-DE"><body><p>Hallo</p></body></html>'
    assert extract_page(html, base_url="https://example.com/").language == "de"


@pytest.mark.parametrize(
    ("name", "language"),
    [
        ("german_article.html", "de"),
        ("french_article.html", "fr"),
        ("spanish_article.html", "es"),
        ("japanese_article.html", "ja"),
        ("chinese_article.html", "zh"),
    ],
)
def test_language_is_detected_from_the_text(name: str, language: str) -> None:
    assert _page(name).language == language


def test_extract_text_plain() -> None:
    page = extract_text_plain("\n\n   Release notes for version 2  \n\nFixed a crash when saving.\n")
    assert page.title == "Release notes for version 2"
    assert page.text == "Release notes for version 2\nFixed a crash when saving."
    assert page.description is None
    assert page.thumbnail_url is None


def test_extract_text_plain_caps_a_long_first_line() -> None:
    page = extract_text_plain("word " * 200)
    assert page.title is not None
    assert len(page.title) <= 200
    assert page.title.endswith("…")


def test_extract_text_plain_of_nothing() -> None:
    page = extract_text_plain("")
    assert page.title is None
    assert page.text == ""


# --- one parse per page: trafilatura gets the tree the metadata came from ----------------------------------


def _text_from_the_markup(html: str) -> str:
    """What the main text is when trafilatura parses the markup itself (the page parsed twice)."""
    import lxml.html

    from enrichment.pipeline.extract import TEXT_MAX_CHARS, _body_text, normalize_paragraphs, trafilatura_text

    extracted = trafilatura_text(html, "https://example.com/a")
    text = normalize_paragraphs(extracted) if extracted else ""
    return (text or _body_text(lxml.html.document_fromstring(html)))[:TEXT_MAX_CHARS]


@pytest.mark.parametrize("name", sorted(p.name for p in PAGES.glob("*.html")))
def test_main_text_from_the_shared_tree_equals_trafilaturas_own_parse(name: str) -> None:
    html = (PAGES / name).read_text(encoding="utf-8")
    assert extract_page(html, base_url="https://example.com/a").text == _text_from_the_markup(html)


def test_trafilatura_is_given_the_parsed_tree_not_the_markup(monkeypatch: pytest.MonkeyPatch) -> None:
    import lxml.html

    given: list[object] = []
    real = trafilatura.extract

    def spy(document: object, **options: object) -> str | None:
        given.append(document)
        return real(document, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(trafilatura, "extract", spy)
    _page("og_article.html")
    assert len(given) == 1 and isinstance(given[0], lxml.html.HtmlElement)


def test_a_page_without_an_article_gets_the_body_text_of_an_untouched_tree() -> None:
    # trafilatura finds nothing here; the body text comes from the tree it was given, which stays whole.
    from enrichment.pipeline.extract import trafilatura_text

    html = "<html><body><button>Click</button><label>Name</label><!-- c --><input></body></html>"
    assert trafilatura_text(html, "https://example.com/") is None
    text = extract_page(html, base_url="https://example.com/").text
    assert text == _text_from_the_markup(html) == "ClickName"


def test_the_tree_given_to_trafilatura_stays_whole() -> None:
    import lxml.html

    from enrichment.metadata import parse_html as _parse
    from enrichment.pipeline.extract import _main_text

    root = _parse((PAGES / "og_article.html").read_text(encoding="utf-8"))
    assert root is not None
    before = lxml.html.tostring(root)
    assert _main_text(root, "https://example.com/a")
    assert lxml.html.tostring(root) == before
