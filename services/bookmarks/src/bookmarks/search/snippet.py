"""Search snippets: ``ts_headline`` output with sentinels turned into safe ``<mark>`` HTML.

PostgreSQL highlights the *folded* text (:func:`headline_document`), wrapping matches in
:data:`START`/:data:`STOP` (private-use characters, removed from the document first so user text can
never produce one). :func:`render_snippet` HTML-escapes everything, turns only the sentinels into
``<mark>``/``</mark>``, and — given the original text — shows the original spelling (accents, case)
instead of the folded one. The result is at most :data:`MAX_SNIPPET_CHARS` characters, markup included.
"""

from __future__ import annotations

import functools
import html
import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from bookmarks.search.folding import fold

START: Final = "\ue000"
STOP: Final = "\ue001"
MAX_SNIPPET_CHARS: Final = 300
ELLIPSIS: Final = "…"
HEADLINE_OPTIONS: Final = f"StartSel={START}, StopSel={STOP}, MaxWords=30, MinWords=12, ShortWord=2, MaxFragments=0"
WINDOW_CHARS: Final = 600  # a snippet shows ≤ 300; ts_headline's cost grows with its input
_PREFIX_CHARS: Final = 4
_BLOCK_CHARS: Final = 2_000
_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")
_SPACE = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SENTINEL = re.compile(f"([{START}{STOP}])")


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


_SANITIZED: dict[str, str] = {}  # per-character cache (a dict lookup is ~20x cheaper than lru_cache)


def _sanitized(char: str) -> str:
    chunk = _SANITIZED.get(char)
    if chunk is None:
        chunk = _sanitize(char)
        if len(_SANITIZED) < 65_536:
            _SANITIZED[char] = chunk
    return chunk


def headline_document(text: str) -> str:
    """The text given to ``ts_headline``: folded like the index, no sentinels, no ``<`` (character-wise)."""
    return _fold_map(text).document


def split_headline(headline: str) -> list[Segment]:
    """Segments of ``headline``; a stray or nested sentinel is dropped rather than trusted."""
    segments: list[Segment] = []
    marked = False
    current: list[str] = []
    for piece in _SENTINEL.split(headline):  # text and sentinels in turn
        if piece in (START, STOP):
            opens = piece == START
            if opens != marked:
                segments.append(Segment("".join(current), marked))
                current, marked = [], opens
            continue
        current.append(piece)
    segments.append(Segment("".join(current), marked))
    return [s for s in segments if s.text]


class _FoldMap:
    """``headline_document(original)`` and the way back from its offsets to ``original``'s.

    ASCII characters fold to exactly one character, and so do most others: only those that do not
    (``ß``, ``ﬁ``, combining marks, sentinels) are remembered (32 KB of text: ~5 ms).
    """

    def __init__(self, original: str) -> None:
        self.original = original
        parts: list[str] = []
        self._irregular: list[int] = []  # original indexes of characters not folding to exactly one
        self._shift_after: list[int] = []  # folded length minus original length up to and including each
        self._empty: set[int] = set()  # characters that fold to nothing (combining marks, sentinels)
        shift = 0
        position = 0
        for run in _NON_ASCII_RUN.finditer(original):
            parts.append(original[position : run.start()].lower().replace("<", _TAG_OPEN_STANDIN))
            chunks = [_sanitized(c) for c in run.group()]
            parts += chunks
            for offset, chunk in enumerate(chunks):
                if len(chunk) != 1:
                    shift += len(chunk) - 1
                    self._irregular.append(run.start() + offset)
                    self._shift_after.append(shift)
                    if not chunk:
                        self._empty.add(run.start() + offset)
            position = run.end()
        parts.append(original[position:].lower().replace("<", _TAG_OPEN_STANDIN))
        self.document = "".join(parts)

    def _folded_start(self, index: int) -> int:
        before = bisect_left(self._irregular, index)
        return index + (self._shift_after[before - 1] if before else 0)

    def to_original(self, folded_offset: int) -> int:
        """The first character whose (non-empty) folded form starts at or after ``folded_offset``."""
        if not self._irregular:  # every character folded to exactly one: the offsets are the same
            return max(0, min(folded_offset, len(self.original)))
        low, high = 0, len(self.original)
        while low < high:
            middle = (low + high) // 2
            if self._folded_start(middle) >= folded_offset:
                high = middle
            else:
                low = middle + 1
        while low < len(self.original) and low in self._empty:
            low += 1
        return low


@functools.lru_cache(maxsize=64)
def _fold_map(text: str) -> _FoldMap:
    """A text's fold map, kept for the page: built for its ``ts_headline`` document, used again to restore
    the original spelling of the headline."""
    return _FoldMap(text)


def _restore_original(segments: list[Segment], original: str) -> list[Segment]:
    """The same segments in the original spelling, or ``segments`` if the fragment is not found."""
    fold_map = _fold_map(original)
    begin = fold_map.document.find("".join(s.text for s in segments))
    if begin < 0:
        return segments
    restored: list[Segment] = []
    for segment in segments:
        end = begin + len(segment.text)
        restored.append(Segment(original[fold_map.to_original(begin) : fold_map.to_original(end)], segment.marked))
        begin = end
    return restored


class _Prefixes:
    r"""Where a word starts like one of the query's terms (snowball stems are prefixes in practice): each
    term's first word's first characters, found as plain text, then kept only at the start of a word.
    The same positions as ``(?<!\w)p1|(?<!\w)p2…``, whose lookbehinds make Python's regex engine try
    every position of the text in turn (5 times slower on a page)."""

    def __init__(self, prefixes: Sequence[str]) -> None:
        self._pattern = re.compile("|".join(re.escape(p) for p in prefixes))

    def search(self, text: str) -> int | None:
        """The index of the first word of ``text`` that starts like a term, or None."""
        position = 0
        while (found := self._pattern.search(text, position)) is not None:
            start = found.start()
            if start == 0 or _WORD_CHAR.match(text, start - 1) is None:
                return start
            position = start + 1
        return None


_WORD_CHAR = re.compile(r"\w")


@functools.lru_cache(maxsize=256)
def _prefixes_of(terms: tuple[str, ...]) -> _Prefixes | None:
    prefixes = sorted({t.split()[0][:_PREFIX_CHARS] for t in terms if t.split()})
    return _Prefixes(prefixes) if prefixes else None


def _hit_pattern(terms: Sequence[str]) -> _Prefixes | None:
    """The query's :class:`_Prefixes` (kept per query: a page asks for it for every field of every hit)."""
    return _prefixes_of(tuple(terms))


def _first_hit(text: str, terms: Sequence[str]) -> int:
    """Index in ``text`` of the earliest likely match, or 0; folds block by block, stops at the hit."""
    pattern = _hit_pattern(terms)
    start = 0
    while pattern is not None and start < len(text):
        end = text.find(" ", start + _BLOCK_CHARS)
        end = len(text) if end < 0 else end + 1  # blocks end after a space: no word is cut
        if pattern.search(fold(text[start:end])) is not None:
            block = _FoldMap(text[start:end])
            found = pattern.search(block.document)
            return start + block.to_original(found) if found is not None else start
        start = end
    return 0


def snippet_window(text: str, terms: Sequence[str], size: int = WINDOW_CHARS) -> str:
    """The part of a long ``text`` worth giving to ``ts_headline``: ~``size`` chars around the first hit.

    ``ts_headline`` parses all of its input (~20 ms for 32 KB), so page text is cut first. ``terms`` are the
    query's folded words and phrases; the cut falls on whitespace, and the result is a slice of ``text``
    (pass it as the ``original`` of :func:`render_snippet`).
    """
    if len(text) <= size:
        return text
    hit = _first_hit(text, terms)
    begin = max(0, min(hit - size // 3, len(text) - size))
    end = begin + size
    if begin > 0:
        space = text.find(" ", begin, hit + 1)
        begin = space + 1 if space >= 0 else begin
    if end < len(text):
        space = text.rfind(" ", begin, end)
        end = space if space > hit else end
    return text[begin:end]


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


def likely_mentions(text: str | None, terms: Sequence[str]) -> bool:
    """Whether ``text`` (a short field) holds a word starting like one of the query's ``terms``."""
    pattern = _hit_pattern(terms)
    return bool(text) and pattern is not None and pattern.search(fold(text or "")) is not None


def best_field(fields: Sequence[str | None], page_text: str | None, terms: Sequence[str]) -> str | None:
    """The text to highlight: the first field that likely mentions a term, else a window of the page text
    that does, else the first non-empty field (shown without marks)."""
    for text in fields:
        if text and likely_mentions(text, terms):
            return text
    if page_text:
        window = snippet_window(page_text, terms)
        if likely_mentions(window, terms):
            return window
    return next((text for text in fields if text), None)
