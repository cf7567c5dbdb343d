"""Search snippets: ``ts_headline`` output with sentinels turned into safe ``<mark>`` HTML (§E3).

PostgreSQL highlights the *folded* text (:func:`headline_document`), wrapping matches in
:data:`START`/:data:`STOP` (private-use characters, removed from the document first so user text can
never produce one). :func:`render_snippet` HTML-escapes everything, turns only the sentinels into
``<mark>``/``</mark>``, and — given the original text — shows the original spelling (accents, case)
instead of the folded one. The result is at most :data:`MAX_SNIPPET_CHARS` characters, markup included.
"""

from __future__ import annotations

import html
import re
from bisect import bisect_left
from dataclasses import dataclass
from typing import Final

from bookmarks.search.folding import fold

START: Final = "\ue000"
STOP: Final = "\ue001"
MAX_SNIPPET_CHARS: Final = 300
ELLIPSIS: Final = "…"
HEADLINE_OPTIONS: Final = f"StartSel={START}, StopSel={STOP}, MaxWords=30, MinWords=12, ShortWord=2, MaxFragments=0"
_SPACE = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class Segment:
    text: str
    marked: bool


# ts_headline drops whatever its parser takes for an HTML tag ("<b>", "<!-- -->"), which would leave the
# fragment impossible to find in the original text: "<" goes in as a blank character instead.
_TAG_OPEN_STANDIN: Final = "\x1f"


def _sanitize(char: str) -> str:
    if char in (START, STOP):
        return ""
    return _TAG_OPEN_STANDIN if char == "<" else fold(char)


def headline_document(text: str) -> str:
    """The text given to ``ts_headline``: folded like the index, no sentinels, no ``<`` (character-wise)."""
    return "".join(_sanitize(c) for c in text)


def split_headline(headline: str) -> list[Segment]:
    """Segments of ``headline``; a stray or nested sentinel is dropped rather than trusted."""
    segments: list[Segment] = []
    marked = False
    current: list[str] = []
    for char in headline:
        if char in (START, STOP):
            opens = char == START
            if opens != marked:
                segments.append(Segment("".join(current), marked))
                current, marked = [], opens
            continue
        current.append(char)
    segments.append(Segment("".join(current), marked))
    return [s for s in segments if s.text]


def _restore_original(segments: list[Segment], original: str) -> list[Segment]:
    """The same segments in the original spelling, or ``segments`` if the fragment is not found."""
    chunks = [_sanitize(c) for c in original]
    document = "".join(chunks)
    fragment_start = document.find("".join(s.text for s in segments))
    if fragment_start < 0:
        return segments
    # Folded offset where each non-empty chunk starts; empty chunks (marks) stay with their base char.
    starts: list[int] = []
    owners: list[int] = []
    offset = 0
    for index, chunk in enumerate(chunks):
        if chunk:
            starts.append(offset)
            owners.append(index)
        offset += len(chunk)

    def to_original(folded_offset: int) -> int:
        at = bisect_left(starts, folded_offset)
        return owners[at] if at < len(owners) else len(original)

    restored: list[Segment] = []
    begin = fragment_start
    for segment in segments:
        end = begin + len(segment.text)
        restored.append(Segment(original[to_original(begin) : to_original(end)], segment.marked))
        begin = end
    return restored


def _html(segment: Segment) -> str:
    escaped = html.escape(segment.text, quote=True)
    return f"<mark>{escaped}</mark>" if segment.marked else escaped


def _clean(segments: list[Segment]) -> list[Segment]:
    cleaned = [Segment(_SPACE.sub(" ", _CONTROL.sub("", s.text)), s.marked) for s in segments]
    if cleaned:
        cleaned[0] = Segment(cleaned[0].text.lstrip(), cleaned[0].marked)
        cleaned[-1] = Segment(cleaned[-1].text.rstrip(), cleaned[-1].marked)
    return [s for s in cleaned if s.text]


def _fit(segments: list[Segment], limit: int) -> str:
    out = ""
    for number, segment in enumerate(segments):
        piece = _html(segment)
        last = number == len(segments) - 1
        if len(out) + len(piece) <= limit and (last or len(out) + len(piece) + len(ELLIPSIS) <= limit):
            out += piece
            continue
        if not segment.marked:
            out += _cut(segment.text, limit - len(out) - len(ELLIPSIS))
        return out.rstrip() + ELLIPSIS
    return out


def _cut(text: str, budget: int) -> str:
    """The longest escaped prefix of ``text`` within ``budget`` characters (never half an entity)."""
    kept = ""
    for char in text:
        escaped = html.escape(char, quote=True)
        if len(kept) + len(escaped) > budget:
            break
        kept += escaped
    return kept


def render_snippet(headline: str, original: str | None = None) -> str:
    """Safe HTML for a ``ts_headline`` result made with :data:`HEADLINE_OPTIONS` on :func:`headline_document`.

    Only ``<mark>`` and ``</mark>`` are markup; everything else is escaped text.
    """
    segments = split_headline(headline)
    if original is not None:
        segments = _restore_original(segments, original)
    return _fit(_clean(segments), MAX_SNIPPET_CHARS)
