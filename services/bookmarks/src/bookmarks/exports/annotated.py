"""The export formats made of highlights (docs/api-guide.md, section 13), as incremental writers (pure):
``markdown`` (a reading-notes document) and ``annotations`` (a W3C Web Annotation ``AnnotationCollection``).

Both take ``annotated(items)``: each bookmark with highlights or notes (its link, title and notes only:
:class:`Annotating`) with its live highlights, in export order. User text is
never markup: Markdown escapes what CommonMark would read as syntax, and every link target is a URL the
service stored (http or https), percent-encoded where Markdown would end it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final, Protocol
from urllib.parse import quote

from bookmarks.api import wire
from bookmarks.exports.folders import FolderTree
from bookmarks.highlights.rules import Highlight

__all__ = [
    "ANNOTATION_CONTEXT",
    "Annotated",
    "Annotating",
    "AnnotationsWriter",
    "MarkdownWriter",
    "annotation",
    "escape_markdown",
    "link_destination",
    "text_fragment_url",
]


class Annotating(Protocol):
    """What these formats show of a bookmark (a ``Bookmark`` record, or the export's narrow read of one)."""

    @property
    def url(self) -> str: ...

    @property
    def title(self) -> str | None: ...

    @property
    def notes(self) -> str | None: ...


Annotated = Sequence[tuple[Annotating, Sequence[Highlight]]]

# --- URL text fragments (https://wicg.github.io/scroll-to-text-fragment/) ---------------------------------

_CONTEXT_WORDS: Final = 3  # of prefix and suffix: enough to tell repeated passages apart
_RANGE_WORDS: Final = 5  # a long quote is linked by its first and last words (textStart,textEnd)
_LONG_QUOTE: Final = 300  # characters: above this, the textStart,textEnd form
_SPACE: Final = re.compile(r"\s+")


# Each byte of UTF-8 as a directive term writes it: letters, digits, "_", "." and "~" as they are, every
# other byte percent-encoded, "-" too (it marks a prefix or suffix), so "," "&" and "-" never read as syntax.
_TERM_BYTES: Final = {
    b: chr(b) if chr(b).isascii() and (chr(b).isalnum() or chr(b) in "_.~") else f"%{b:02X}" for b in range(256)
}


def _fragment_term(text: str) -> str:
    """A directive term: ``urllib.parse.quote(text, safe="")`` with ``-`` encoded too, by one table lookup
    per byte (an export writes three terms per highlight)."""
    return text.encode().decode("latin-1").translate(_TERM_BYTES)


def _words(text: str) -> list[str]:
    return _SPACE.split(text.strip()) if text.strip() else []


def text_fragment_url(url: str, quote_text: str, prefix: str = "", suffix: str = "") -> str:
    """``url`` with a ``:~:text=`` directive finding ``quote_text``: ``prefix-,start[,end],-suffix``
    (a few words of context on each side, when there is any; a quote over 300 characters by its first
    and last five words). A fragment the URL already has stays before the directive."""
    words = _words(quote_text)
    if not words:
        return url
    if len(quote_text) > _LONG_QUOTE and len(words) > 2 * _RANGE_WORDS:
        terms = [" ".join(words[:_RANGE_WORDS]), " ".join(words[-_RANGE_WORDS:])]
    else:
        terms = [" ".join(words)]
    parts = [_fragment_term(t) for t in terms]
    if before := _words(prefix)[-_CONTEXT_WORDS:]:
        parts.insert(0, _fragment_term(" ".join(before)) + "-")
    if after := _words(suffix)[:_CONTEXT_WORDS]:
        parts.append("-" + _fragment_term(" ".join(after)))
    directive = ":~:text=" + ",".join(parts)
    return url + directive if "#" in url else url + "#" + directive


# --- Markdown ---------------------------------------------------------------------------------------------

# CommonMark syntax anywhere in a line: code, emphasis, links and images, raw HTML and autolinks, entities,
# tables and strikethrough (GFM). Backslash-escaped, each is shown as itself.
_INLINE: Final = str.maketrans({char: "\\" + char for char in "\\`*_{}[]<>#|~&"})
# At the start of a line: block quotes, headings, list items, setext underlines, ordered lists.
_LINE_START: Final = re.compile(r"^([>+=-]|\d{1,9}[.)])")


def _escape_line_start(match: re.Match[str]) -> str:
    return match.group(1)[:-1] + "\\" + match.group(1)[-1]


def escape_markdown(text: str) -> list[str]:
    """``text`` as Markdown lines that render as the text itself: syntax characters escaped, leading
    blanks dropped (four would start a code block), line structure kept (blank lines included)."""
    lines = []
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        lines.append(_LINE_START.sub(_escape_line_start, raw.strip().translate(_INLINE)))
    return lines


def _inline(text: str) -> str:
    """One line of escaped text (a heading, a link's text)."""
    return " ".join(part for part in escape_markdown(_SPACE.sub(" ", text)) if part)


_DESTINATION_ENDS: Final = re.compile(r"[<>\s\\]")


def link_destination(url: str) -> str:
    """A link destination in angle brackets: ``<``, ``>``, spaces and line breaks percent-encoded (a
    stored URL has none that matter, but nothing may close the destination early)."""
    return "<" + _DESTINATION_ENDS.sub(_percent_encoded, url) + ">"


def _percent_encoded(match: re.Match[str]) -> str:
    return quote(match.group(0), safe="")


def _paragraphs(text: str) -> str:
    lines = escape_markdown(text.strip())
    return "\n".join(lines).strip("\n") + "\n\n" if any(lines) else ""


class MarkdownWriter:
    """``# Highlights``, then per bookmark with highlights or notes: ``## [title](url)``, its notes, each
    highlight as a block quote followed by its note and a link to the passage on the live page."""

    media_type = "text/markdown; charset=utf-8"
    extension = "md"

    def __init__(self, tree: FolderTree, *, is_pro: bool, exported_at: datetime) -> None:
        del tree, is_pro
        self._exported_at = exported_at

    def head(self) -> str:
        return f"# Highlights\n\nExported {wire.iso(self._exported_at)}.\n\n"

    def annotated(self, items: Annotated) -> str:
        return "".join(self.section(b, hs) for b, hs in items if hs or (b.notes or "").strip())

    def tail(self) -> str:
        return ""

    @staticmethod
    def section(bookmark: Annotating, highlights: Sequence[Highlight]) -> str:
        title = _inline(bookmark.title or "") or _inline(bookmark.url)
        parts = [f"## [{title}]({link_destination(bookmark.url)})\n\n", _paragraphs(bookmark.notes or "")]
        for h in highlights:
            quoted = "\n".join(f"> {line}" if line else ">" for line in escape_markdown(h.quote.strip()))
            parts.append(quoted + "\n\n")
            parts.append(_paragraphs(h.note))
            target = text_fragment_url(bookmark.url, h.quote, h.prefix, h.suffix)
            parts.append(f"[Open the passage]({link_destination(target)})\n\n")
        return "".join(parts)


# --- W3C Web Annotation (https://www.w3.org/TR/annotation-model/) -------------------------------------------

ANNOTATION_CONTEXT: Final = "http://www.w3.org/ns/anno.jsonld"
_IDS: Final = uuid.UUID("6b1f7c9e-3f2a-5d0e-9c4b-0a8e2d6f1b37")  # the namespace of annotation ids


def annotation_id(highlight: Highlight) -> str:
    """A stable IRI per highlight (the same in every export of it)."""
    return f"urn:uuid:{uuid.uuid5(_IDS, f'{highlight.owner_uid}/{highlight.highlight_id}')}"


def annotation(bookmark: Annotating, highlight: Highlight) -> dict[str, Any]:
    """One highlight as an Annotation: its target the bookmark's URL with a TextQuoteSelector (and a
    TextPositionSelector when it has offsets in the page's readable text; selectors are alternatives),
    its note a TextualBody."""
    quote_selector: dict[str, Any] = {"type": "TextQuoteSelector", "exact": highlight.quote}
    if highlight.prefix:
        quote_selector["prefix"] = highlight.prefix
    if highlight.suffix:
        quote_selector["suffix"] = highlight.suffix
    selectors = [quote_selector]
    if highlight.quote_start is not None and highlight.quote_end is not None:
        selectors.append({"type": "TextPositionSelector", "start": highlight.quote_start, "end": highlight.quote_end})
    out: dict[str, Any] = {
        "id": annotation_id(highlight),
        "type": "Annotation",
        "motivation": "commenting" if highlight.note else "highlighting",
        "created": wire.iso(highlight.created_at),
        "modified": wire.iso(highlight.updated_at),
    }
    if highlight.note:
        out["body"] = {"type": "TextualBody", "value": highlight.note, "format": "text/plain", "purpose": "commenting"}
    out["target"] = {"source": bookmark.url, "selector": selectors if len(selectors) > 1 else quote_selector}
    return out


class AnnotationsWriter:
    """One JSON-LD ``AnnotationCollection`` whose first (and only) embedded ``AnnotationPage`` lists every
    highlight as an Annotation, one per line."""

    media_type = "application/ld+json"
    extension = "jsonld"

    def __init__(self, tree: FolderTree, *, is_pro: bool, exported_at: datetime) -> None:
        del tree, is_pro
        self._exported_at = exported_at
        self._first = True
        self._id = uuid.uuid4()

    def head(self) -> str:
        collection = {
            "@context": ANNOTATION_CONTEXT,
            "id": f"urn:uuid:{self._id}",
            "type": "AnnotationCollection",
            "label": "Highlights",
            "created": wire.iso(self._exported_at),
        }
        page = {"id": f"urn:uuid:{uuid.uuid5(self._id, 'page-0')}", "type": "AnnotationPage", "startIndex": 0}
        # Both objects are written open: the page's "items" array is streamed, then closed by tail().
        return wire.dumps(collection).decode()[:-1] + ',"first":' + wire.dumps(page).decode()[:-1] + ',"items":['

    def annotated(self, items: Annotated) -> str:
        lines = [wire.dumps(annotation(b, h)).decode() for b, hs in items for h in hs]
        if not lines:
            return ""
        prefix, self._first = ("\n" if self._first else ",\n"), False
        return prefix + ",\n".join(lines)

    def tail(self) -> str:
        return "]}}\n" if self._first else "\n]}}\n"
