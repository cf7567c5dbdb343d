"""Metadata and main text of a fetched document (docs/api-guide.md, section 6).

Metadata is read by :mod:`enrichment.metadata` (shared with link previews). Main text comes from
trafilatura, which drops navigation, ads and comments; when it finds no article the visible text of
``<body>`` is used instead. All of this is CPU-bound and synchronous: async callers run it in a thread.
"""

from __future__ import annotations

import logging
from typing import Final

import lxml.html
import trafilatura

from enrichment.metadata import TITLE_MAX_CHARS, parse_html, read_metadata
from enrichment.pipeline.text import detect_language, normalize_paragraphs, truncate_at_word
from enrichment.pipeline.types import PageContent

__all__ = ["TITLE_MAX_CHARS", "extract_page", "extract_text_plain"]

logger = logging.getLogger(__name__)

PLAIN_TITLE_MAX_CHARS: Final = 200
TEXT_MAX_CHARS: Final = 200_000
"""Readable text kept per page; beyond this it is boilerplate or a data dump, not something to summarize."""

# Elements whose text is never part of what a reader sees as the page's content.
_INVISIBLE_TAGS: Final = ("script", "style", "noscript", "template", "svg", "math", "head", "iframe", "object")
_BLOCK_TAGS: Final = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "dd", "details", "div", "dl", "dt", "fieldset",
        "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li",
        "main", "nav", "ol", "p", "pre", "section", "summary", "table", "td", "th", "tr", "ul",
    }
)  # fmt: skip


def extract_page(html: str, *, base_url: str) -> PageContent:
    """Metadata (absolute URLs, whitespace collapsed, entities decoded), main text and language of ``html``."""
    root = parse_html(html)
    if root is None:
        return PageContent(None, None, None, "", None, None, None)
    metadata = read_metadata(root, base_url)
    text = _main_text(root, base_url)
    sample = text or " ".join(part for part in (metadata.title, metadata.description) if part)
    return PageContent(
        title=metadata.title,
        description=metadata.description,
        thumbnail_url=metadata.image_url,
        text=text,
        language=detect_language(sample, declared=metadata.declared_language),
        site_name=metadata.site_name,
        canonical_url=metadata.canonical_url,
    )


def extract_text_plain(text: str) -> PageContent:
    """A text/plain document: the first non-empty line is its title, all of it is its text."""
    body = normalize_paragraphs(text.replace("\x00", ""))[:TEXT_MAX_CHARS]
    first_line = body.split("\n", 1)[0] if body else ""
    return PageContent(
        title=truncate_at_word(first_line, PLAIN_TITLE_MAX_CHARS) or None,
        description=None,
        thumbnail_url=None,
        text=body,
        language=detect_language(body),
        site_name=None,
        canonical_url=None,
    )


# --- main text -----------------------------------------------------------------------------------------


def trafilatura_text(document: str | lxml.html.HtmlElement, url: str) -> str | None:
    """trafilatura's main text of markup or of a parsed tree, with the options the pipeline uses."""
    text: str | None = trafilatura.extract(
        document,
        url=url,
        include_comments=False,
        favor_precision=True,
        include_images=False,
        include_links=False,
        with_metadata=False,
    )
    return text


def _main_text(root: lxml.html.HtmlElement, base_url: str) -> str:
    """trafilatura's main text of the already parsed ``root``, else its body text. trafilatura works on a
    copy of a tree it is given (cheaper than parsing the markup again), so ``root`` stays whole."""
    extracted: str | None
    try:
        extracted = trafilatura_text(root, base_url)
    except Exception:  # trafilatura parses hostile markup; a crash there must not lose the page
        logger.warning("trafilatura failed; using the page body text", exc_info=True)
        extracted = None
    text = normalize_paragraphs(extracted) if extracted else ""
    if not text:
        text = _body_text(root)
    return text[:TEXT_MAX_CHARS]


def _body_text(root: lxml.html.HtmlElement) -> str:
    """Visible text of ``<body>``, one line per block element."""
    bodies = root.xpath("//body")
    body = bodies[0] if bodies else root
    parts: list[str] = []
    # An explicit stack rather than recursion: hostile pages nest elements thousands deep.
    stack: list[tuple[lxml.html.HtmlElement, bool]] = [(body, False)]
    while stack:
        element, closing = stack.pop()
        tag = element.tag if isinstance(element.tag, str) else ""
        block = tag in _BLOCK_TAGS
        if closing:
            if block:
                parts.append("\n")
            if element.tail and element is not body:
                parts.append(element.tail)
            continue
        if not tag or tag in _INVISIBLE_TAGS or element.get("hidden") is not None:
            # Comments, scripts, hidden elements: none of their own text, but the text after them counts.
            if element.tail and element is not body:
                parts.append(element.tail)
            continue
        if block:
            parts.append("\n")
        if element.text:
            parts.append(element.text)
        stack.append((element, True))
        stack.extend((child, False) for child in reversed(element))
    return normalize_paragraphs("".join(parts))
