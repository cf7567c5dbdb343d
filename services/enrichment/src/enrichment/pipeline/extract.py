"""Metadata and main text of a fetched document (docs/api-guide.md, section 6).

Metadata priority per field: Open Graph, Twitter cards, JSON-LD, then ``<title>`` / meta description.
Main text comes from trafilatura, which drops navigation, ads and comments; when it finds no article the
visible text of ``<body>`` is used instead. All of this is CPU-bound and synchronous: async callers run
it in a thread.
"""

from __future__ import annotations

import html as html_lib
import json
import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final
from urllib.parse import urljoin, urlsplit

import lxml.etree
import lxml.html
import trafilatura

from enrichment.pipeline.text import (
    collapse_whitespace,
    detect_language,
    normalize_language_code,
    normalize_paragraphs,
    truncate_at_word,
)
from enrichment.pipeline.types import PageContent

__all__ = ["extract_page", "extract_text_plain"]

logger = logging.getLogger(__name__)

TITLE_MAX_CHARS: Final = 1000  # the bookmark title limit (docs/api-guide.md, section 1)
PLAIN_TITLE_MAX_CHARS: Final = 200
DESCRIPTION_MAX_CHARS: Final = 2000
SITE_NAME_MAX_CHARS: Final = 200
URL_MAX_CHARS: Final = 2048
TEXT_MAX_CHARS: Final = 200_000
"""Readable text kept per page; beyond this it is boilerplate or a data dump, not something to summarize."""

_XML_DECLARATION: Final = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
_ENTITY: Final = re.compile(r"&(?:#\d{1,7}|#x[0-9a-f]{1,6}|[a-z][a-z0-9]{1,31});", re.IGNORECASE)
_MARKUP: Final = re.compile(r"<\s*/?\s*[a-z!][^>]*>", re.IGNORECASE)

# Schema.org types whose headline/description/image describe the page, best first. Articles describe the
# content itself; WebPage nodes are often generic wrappers, so they only fill what nothing better has.
_ARTICLE_TYPES: Final = frozenset(
    {
        "article", "newsarticle", "blogposting", "techarticle", "scholarlyarticle", "report",
        "socialmediaposting", "liveblogposting", "reportagenewsarticle", "analysisnewsarticle",
        "opinionnewsarticle", "reviewnewsarticle", "backgroundnewsarticle", "discussionforumposting",
        "review", "posting", "medicalscholarlyarticle", "advertisercontentarticle", "satiricalarticle",
    }
)  # fmt: skip
_PRODUCT_TYPES: Final = frozenset({"product", "productgroup", "individualproduct", "productmodel"})
_CREATIVE_TYPES: Final = frozenset(
    {
        "recipe", "videoobject", "event", "course", "book", "movie", "podcastepisode", "podcastseries",
        "softwareapplication", "mobileapplication", "webapplication", "howto", "dataset", "musicalbum",
        "musicrecording", "tvseries", "creativework", "localbusiness", "organization", "person", "place",
    }
)  # fmt: skip
_PAGE_TYPES: Final = frozenset(
    {
        "webpage", "itempage", "aboutpage", "collectionpage", "profilepage", "faqpage", "qapage",
        "searchresultspage", "medicalwebpage", "contactpage", "checkoutpage", "realestatelisting",
    }
)  # fmt: skip

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
    root = _parse(html)
    if root is None:
        return PageContent(None, None, None, "", None, None, _absolute(None, base_url))

    url_base = _document_base(root, base_url)
    meta = _meta_values(root)
    json_ld = _JsonLd.from_root(root)

    title = _first_text(
        (meta.get("og:title"), meta.get("twitter:title"), json_ld.title(), _title_element(root)),
        limit=TITLE_MAX_CHARS,
    )
    description = _first_text(
        (
            meta.get("og:description"),
            meta.get("twitter:description"),
            json_ld.description(),
            meta.get("description"),
        ),
        limit=DESCRIPTION_MAX_CHARS,
    )
    thumbnail_url = _first_url(
        (
            meta.get("og:image"),
            meta.get("og:image:url"),
            meta.get("og:image:secure_url"),
            meta.get("twitter:image"),
            meta.get("twitter:image:src"),
            *json_ld.images(),
            _link_href(root, "image_src"),
        ),
        url_base,
    )
    site_name = _first_text(
        (meta.get("og:site_name"), json_ld.site_name(), meta.get("application-name")),
        limit=SITE_NAME_MAX_CHARS,
    )
    canonical_url = _first_url((_link_href(root, "canonical"), meta.get("og:url")), url_base)

    text = _main_text(root, base_url)
    declared = _declared_language(root, meta)
    sample = text or " ".join(part for part in (title, description) if part)
    return PageContent(
        title=title,
        description=description,
        thumbnail_url=thumbnail_url,
        text=text,
        language=detect_language(sample, declared=declared),
        site_name=site_name,
        canonical_url=canonical_url,
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


# --- parsing -------------------------------------------------------------------------------------------


# The parser trafilatura uses for the documents it parses itself: the one tree serves metadata and text.
_PARSER = lxml.html.HTMLParser(collect_ids=False, default_doctype=False, remove_comments=True, remove_pis=True)


def _parse(html: str) -> lxml.html.HtmlElement | None:
    # lxml refuses str input that still declares a byte encoding, and NUL bytes end its input early.
    cleaned = _XML_DECLARATION.sub("", html.replace("\x00", ""), count=1)
    if not cleaned.strip():
        return None
    try:
        return lxml.html.document_fromstring(cleaned, parser=_PARSER)
    except (lxml.etree.ParserError, ValueError):
        return None


def _document_base(root: lxml.html.HtmlElement, base_url: str) -> str:
    """The URL relative references resolve against: ``<base href>`` (itself relative to the page) wins."""
    for element in root.iter("base"):
        href = element.get("href")
        if href and href.strip():
            resolved = _absolute(href, base_url)
            if resolved is not None:
                return resolved
            break
    return base_url


def _meta_values(root: lxml.html.HtmlElement) -> dict[str, str]:
    """First non-empty ``content`` per ``property``/``name``/``itemprop``, keys lowercased."""
    values: dict[str, str] = {}
    for element in root.iter("meta"):
        content = element.get("content")
        if content is None or not content.strip():
            continue
        for attribute in ("property", "name", "itemprop"):
            key = element.get(attribute)
            if key:
                values.setdefault(key.strip().lower(), content)
    return values


def _title_element(root: lxml.html.HtmlElement) -> str | None:
    for element in root.iter("title"):
        # An inline SVG's <title> is a tooltip, not the document title.
        if any(ancestor.tag == "svg" for ancestor in element.iterancestors()):
            continue
        return str(element.text_content())
    return None


def _link_href(root: lxml.html.HtmlElement, rel: str) -> str | None:
    for element in root.iter("link"):
        rels = (element.get("rel") or "").lower().split()
        if rel in rels:
            href = element.get("href")
            if href and href.strip():
                return str(href)
    return None


def _declared_language(root: lxml.html.HtmlElement, meta: Mapping[str, str]) -> str | None:
    candidates = (
        root.get("lang"),
        root.get("{http://www.w3.org/XML/1998/namespace}lang"),
        root.get("xml:lang"),
        _http_equiv(root, "content-language"),
        meta.get("og:locale"),
        meta.get("language"),
    )
    for candidate in candidates:
        # Content-Language may list several languages; the first one is the primary.
        code = normalize_language_code((candidate or "").split(",")[0])
        if code is not None:
            return code
    return None


def _http_equiv(root: lxml.html.HtmlElement, name: str) -> str | None:
    for element in root.iter("meta"):
        if (element.get("http-equiv") or "").strip().lower() == name:
            content = element.get("content")
            return str(content) if content is not None else None
    return None


# --- values --------------------------------------------------------------------------------------------


def _clean_text(value: str | None, *, limit: int) -> str | None:
    if value is None:
        return None
    # Publishers often encode twice ("&amp;amp;"), and JSON-LD strings are never entity-decoded by the
    # HTML parser; a second decoding pass turns both into what a reader would see.
    if _ENTITY.search(value):
        value = html_lib.unescape(value)
    cleaned = collapse_whitespace(value)
    return truncate_at_word(cleaned, limit) if cleaned else None


def _strip_markup(value: str) -> str:
    try:
        fragment = lxml.html.fragment_fromstring(value, create_parent="div")
    except (lxml.etree.ParserError, ValueError):
        return _MARKUP.sub(" ", value)
    return str(fragment.text_content())


def _first_text(candidates: Iterable[str | None], *, limit: int) -> str | None:
    for candidate in candidates:
        cleaned = _clean_text(candidate, limit=limit)
        if cleaned:
            return cleaned
    return None


def _first_url(candidates: Iterable[str | None], base: str) -> str | None:
    for candidate in candidates:
        resolved = _absolute(candidate, base)
        if resolved is not None:
            return resolved
    return None


def _absolute(value: str | None, base: str) -> str | None:
    """``value`` resolved against ``base``; only http(s) URLs are kept (no data:, javascript:, …)."""
    if value is None:
        return None
    if _ENTITY.search(value):
        value = html_lib.unescape(value)
    # Browsers drop leading/trailing whitespace and tabs/newlines inside URLs; inner spaces are encoded.
    value = re.sub(r"[\t\n\r]", "", value.strip()).replace(" ", "%20")
    if not value:
        return None
    try:
        resolved = urljoin(base, value)
        parts = urlsplit(resolved)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc or len(resolved) > URL_MAX_CHARS:
        return None
    return resolved


# --- JSON-LD -------------------------------------------------------------------------------------------


class _JsonLd:
    """Schema.org nodes from every ``application/ld+json`` block, ranked by how well they describe the page."""

    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        self._by_id = {node["@id"]: node for node in nodes if isinstance(node.get("@id"), str)}
        ranked = [(rank, index, node) for index, node in enumerate(nodes) if (rank := _type_rank(node)) is not None]
        self._ranked = [node for _, _, node in sorted(ranked, key=lambda item: (item[0], item[1]))]
        self._nodes = nodes

    @classmethod
    def from_root(cls, root: lxml.html.HtmlElement) -> _JsonLd:
        nodes: list[dict[str, Any]] = []
        for element in root.iter("script"):
            if not (element.get("type") or "").strip().lower().startswith("application/ld+json"):
                continue
            raw = (element.text or "").strip()
            # Some CMSs wrap the JSON in an HTML comment or CDATA section.
            raw = re.sub(r"^\s*(?:<!--|<!\[CDATA\[)|(?:-->|\]\]>)\s*$", "", raw)
            try:
                data = json.loads(raw)
            except ValueError:
                logger.debug("ignoring unparsable JSON-LD block")
                continue
            nodes.extend(_flatten(data))
        return cls(nodes)

    def title(self) -> str | None:
        return self._first_string("headline", "name")

    def description(self) -> str | None:
        return self._first_string("description")

    def images(self) -> Iterator[str]:
        for node in self._ranked:
            for key in ("image", "thumbnailUrl", "thumbnail"):
                if key in node:
                    yield from self._image_urls(node[key])

    def site_name(self) -> str | None:
        for node in self._nodes:
            if "website" in _types(node):
                name = _as_string(node.get("name"))
                if name:
                    return _json_ld_text(name)
        for node in self._ranked:
            publisher = self._deref(node.get("publisher"))
            if isinstance(publisher, dict):
                name = _as_string(publisher.get("name"))
                if name:
                    return _json_ld_text(name)
        return None

    def _first_string(self, *keys: str) -> str | None:
        for node in self._ranked:
            for key in keys:
                value = _as_string(node.get(key))
                if value:
                    return _json_ld_text(value)
        return None

    def _image_urls(self, value: Any, depth: int = 0) -> Iterator[str]:
        if depth > 3:
            return
        value = self._deref(value)
        if isinstance(value, str):
            yield value
        elif isinstance(value, list):
            for item in value:
                yield from self._image_urls(item, depth + 1)
        elif isinstance(value, dict):
            for key in ("url", "contentUrl", "@id"):
                url = value.get(key)
                if isinstance(url, str) and url.strip():
                    yield url
                    return

    def _deref(self, value: Any) -> Any:
        """Follow ``{"@id": …}`` references to the node they name within the same document."""
        if isinstance(value, dict) and set(value) == {"@id"} and value["@id"] in self._by_id:
            return self._by_id[value["@id"]]
        return value


def _flatten(data: Any, depth: int = 0) -> Iterator[dict[str, Any]]:
    if depth > 4:
        return
    if isinstance(data, list):
        for item in data:
            yield from _flatten(item, depth + 1)
    elif isinstance(data, dict):
        yield data
        graph = data.get("@graph")
        if graph is not None:
            yield from _flatten(graph, depth + 1)


def _types(node: Mapping[str, Any]) -> set[str]:
    raw = node.get("@type")
    values = raw if isinstance(raw, list) else [raw]
    # "schema:Article" and "http://schema.org/Article" name the same type as "Article".
    return {re.split(r"[/:#]", value)[-1].lower() for value in values if isinstance(value, str)}


def _type_rank(node: Mapping[str, Any]) -> int | None:
    types = _types(node)
    for rank, family in enumerate((_ARTICLE_TYPES, _PRODUCT_TYPES, _CREATIVE_TYPES, _PAGE_TYPES)):
        if types & family:
            return rank
    return None


def _json_ld_text(value: str) -> str:
    """JSON-LD strings are raw: entities are not decoded by the HTML parser and CMSs embed markup."""
    value = html_lib.unescape(value)
    return _strip_markup(value) if _MARKUP.search(value) else value


def _as_string(value: Any) -> str | None:
    if isinstance(value, list):
        value = next((item for item in value if isinstance(item, str) and item.strip()), None)
    if isinstance(value, dict):
        value = value.get("@value")
    return value if isinstance(value, str) and value.strip() else None


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
