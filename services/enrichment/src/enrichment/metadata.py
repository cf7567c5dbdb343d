"""What a page's markup says about itself: title, description, image, site name, canonical URL, icon.

Priority per field: Open Graph, Twitter cards, JSON-LD, then ``<title>`` / meta description. Shared by
the enrichment pipeline (which also reads the main text) and link previews (which read only the head).
Pure and synchronous: lxml only, no network, nothing heavier imported.
"""

from __future__ import annotations

import html as html_lib
import json
import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urljoin, urlsplit

import lxml.etree
import lxml.html

from enrichment.pipeline.text import collapse_whitespace, normalize_language_code, truncate_at_word

__all__ = [
    "DESCRIPTION_MAX_CHARS",
    "SITE_NAME_MAX_CHARS",
    "TITLE_MAX_CHARS",
    "URL_MAX_CHARS",
    "PageMetadata",
    "absolute_url",
    "parse_html",
    "read_metadata",
]

logger = logging.getLogger(__name__)

TITLE_MAX_CHARS: Final = 1000  # the bookmark title limit (docs/api-guide.md, section 1)
DESCRIPTION_MAX_CHARS: Final = 2000
SITE_NAME_MAX_CHARS: Final = 200
URL_MAX_CHARS: Final = 2048
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


@dataclass(frozen=True, slots=True)
class PageMetadata:
    """The page's own description of itself; every value cleaned, URLs absolute http(s) or None."""

    title: str | None
    description: str | None
    image_url: str | None
    site_name: str | None
    canonical_url: str | None
    declared_language: str | None
    """ISO 639-1 code the page declares (``<html lang>``, Content-Language, ``og:locale``)."""
    icon_url: str | None
    """The page's declared icon (``<link rel="icon">`` and kin), else ``/favicon.ico`` of its origin."""


def parse_html(html: str) -> lxml.html.HtmlElement | None:
    """The document tree of ``html``; None when there is no markup to read."""
    return _parse(html)


def absolute_url(value: str | None, base: str) -> str | None:
    """``value`` resolved against ``base``; only http(s) URLs are kept (no data:, javascript:, …)."""
    return _absolute(value, base)


def read_metadata(root: lxml.html.HtmlElement, base_url: str) -> PageMetadata:
    """The metadata of a parsed document fetched from ``base_url``."""
    url_base = _document_base(root, base_url)
    meta = _meta_values(root)
    json_ld = _JsonLd.from_root(root)
    return PageMetadata(
        title=_first_text(
            (meta.get("og:title"), meta.get("twitter:title"), json_ld.title(), _title_element(root)),
            limit=TITLE_MAX_CHARS,
        ),
        description=_first_text(
            (
                meta.get("og:description"),
                meta.get("twitter:description"),
                json_ld.description(),
                meta.get("description"),
            ),
            limit=DESCRIPTION_MAX_CHARS,
        ),
        image_url=_first_url(
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
        ),
        site_name=_first_text(
            (meta.get("og:site_name"), json_ld.site_name(), meta.get("application-name")), limit=SITE_NAME_MAX_CHARS
        ),
        canonical_url=_first_url((_link_href(root, "canonical"), meta.get("og:url")), url_base),
        declared_language=_declared_language(root, meta),
        icon_url=_first_url((*_icon_hrefs(root), "/favicon.ico"), url_base),
    )


def _icon_hrefs(root: lxml.html.HtmlElement) -> list[str]:
    """Declared icons, the largest declared size first (``any`` counts as large: usually SVG, dropped
    later by the image rules, so a raster icon after it is still tried by the caller's order)."""
    found: list[tuple[int, int, str]] = []
    for index, element in enumerate(root.iter("link")):
        rels = set((element.get("rel") or "").lower().split())
        href = element.get("href")
        if not href or not href.strip() or not rels & {"icon", "apple-touch-icon", "apple-touch-icon-precomposed"}:
            continue
        if "mask-icon" in rels or (element.get("type") or "").strip().lower() == "image/svg+xml":
            continue
        found.append((-_icon_size(element.get("sizes")), index, str(href)))
    return [href for _, _, href in sorted(found)]


def _icon_size(sizes: str | None) -> int:
    best = 0
    for token in (sizes or "").lower().split():
        width, _, height = token.partition("x")
        if width.isdigit() and height.isdigit():
            best = max(best, min(int(width), int(height)))
    return best


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
