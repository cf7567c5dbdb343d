"""Captured pages (HTML a user's browser sent) made safe to parse, render and serve.

Two steps, both bounded whatever the markup:

- :func:`bounded_html` parses with libxml2 (lxml), which stops nesting at 255 levels and reads huge
  attributes in linear time, and serializes the tree again. Everything downstream (html5ever in nh3,
  the browser) then sees at most that depth: html5ever alone spends tens of seconds on 50,000 nested
  ``<div>``.
- :func:`sanitize_snapshot` passes the bounded HTML through nh3 (ammonia) with its default allow-list:
  no ``script``/``style`` (content dropped), no event-handler or ``style`` attributes, no ``form``,
  ``iframe``, ``object``, ``embed``, ``meta`` or ``base`` elements, and only ``http``/``https``/
  ``mailto``-like URL schemes (``javascript:`` and ``data:`` links lose their ``href``).
"""

from __future__ import annotations

from typing import Final

import lxml.etree
import lxml.html
import nh3

__all__ = ["bounded_html", "renderable_html", "sanitize_snapshot"]

_EMPTY: Final = "<html><body></body></html>"
# Elements removed with their content; any other element outside the allow-list is unwrapped (its text
# stays). A page's title and its no-script fallback are not part of the readable page.
_DROPPED_WITH_CONTENT: Final = frozenset({"script", "style", "title", "noscript", "template"})


def _tree(html: str) -> lxml.html.HtmlElement | None:
    if not html.strip():
        return None
    try:
        return lxml.html.document_fromstring(html)
    except (lxml.etree.ParserError, ValueError):
        return None


def _serialize(root: lxml.html.HtmlElement | None) -> str:
    if root is None:
        return _EMPTY
    return str(lxml.html.tostring(root, encoding="unicode", doctype="<!DOCTYPE html>"))


def bounded_html(html: str) -> str:
    """``html`` re-serialized from libxml2's tree: nesting capped, every tag closed, comments kept."""
    return _serialize(_tree(html))


def renderable_html(html: str) -> str:
    """:func:`bounded_html` without what would navigate a browser away from the page even with scripts
    off (``<meta http-equiv>`` refresh, ``<base>``); styles stay, so the screenshot looks like the page."""
    root = _tree(html)
    if root is not None:
        for element in root.xpath("//meta[@http-equiv] | //base | //script"):
            element.drop_tree()
    return _serialize(root)


def sanitize_snapshot(html: str) -> str:
    """The captured page as a stored snapshot: readable markup and nothing that can run or submit."""
    cleaned = nh3.clean(
        bounded_html(html), clean_content_tags=set(_DROPPED_WITH_CONTENT), link_rel="noopener noreferrer nofollow"
    )
    return f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head><body>{cleaned}</body></html>'
