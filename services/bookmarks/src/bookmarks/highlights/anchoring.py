"""Where a highlight sits in a bookmark's readable text, found again after the text changed.

A highlight is held by its selectors: the quote, up to 64 characters of context on each side
(prefix, suffix) and the offsets the client saw (a hint). :func:`anchor` finds it in a text:

1. **exact** — every occurrence of the quote is a candidate;
2. **fuzzy** — when there is none, the substrings closest to the quote by edit distance, at most 20 %
   of its length (edlib, Myers' bit-parallel search), are;
3. **orphan** — when there is no candidate: the highlight keeps its quote, loses its offsets.

Among candidates the context decides (characters of the prefix that end right before the candidate
plus characters of the suffix that start right after it), then nearness to the hinted start, then the
earlier start, then the earlier end. Offsets count Unicode code points. The web app and the extension implement the same
rule against the same vectors (``clients/shared/vectors/anchoring.json``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

import edlib

AnchorKind = Literal["exact", "fuzzy", "orphan"]

MAX_ERROR_RATIO = 0.2
# More occurrences of a quote than this are not weighed one by one: the first ones are.
MAX_CANDIDATES = 10_000
# edlib compares bytes: the quote's characters get one code each and every other character of the text
# a shared one, which keeps each distance exact. A quote with more distinct characters than the codes
# (a long passage of an ideographic script) is matched exactly only.
_CODES = 255


@dataclass(frozen=True, slots=True)
class Selector:
    quote: str
    prefix: str = ""
    suffix: str = ""
    start: int | None = None
    end: int | None = None


@dataclass(frozen=True, slots=True)
class Anchor:
    kind: AnchorKind
    start: int | None
    end: int | None


ORPHAN = Anchor("orphan", None, None)


def anchor(text: str, selector: Selector) -> Anchor:
    """The highlight's place in ``text`` (see the module's rule)."""
    return anchor_all(text, [selector])[0]


def anchor_all(text: str, selectors: list[Selector]) -> list[Anchor]:
    """:func:`anchor` of each selector, the text encoded for edlib once for all of them."""
    encoded = _Encoded(text)
    return [_anchor(encoded, selector) for selector in selectors]


def _anchor(encoded: _Encoded, selector: Selector) -> Anchor:
    text = encoded.text
    exact = _occurrences(text, selector.quote)
    if exact:
        start, end = _best(text, selector, exact)
        return Anchor("exact", start, end)
    fuzzy = _approximate(encoded, selector.quote)
    if fuzzy:
        start, end = _best(text, selector, fuzzy)
        return Anchor("fuzzy", start, end)
    return ORPHAN


def _occurrences(text: str, quote: str) -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    at = text.find(quote)
    while at != -1 and len(found) < MAX_CANDIDATES:
        found.append((at, at + len(quote)))
        at = text.find(quote, at + 1)
    return found


class _Encoded:
    """The text as edlib's bytes. When it has fewer distinct characters than the codes (most texts), it
    is encoded once and each quote's characters that it lacks share the one code no text byte has;
    otherwise each quote encodes it again with the quote's own alphabet."""

    def __init__(self, text: str) -> None:
        self.text = text
        alphabet = sorted(set(text))
        self._shared = {c: i for i, c in enumerate(alphabet)} if len(alphabet) < _CODES else None
        self._bytes = bytes(map(self._shared.__getitem__, text)) if self._shared is not None else b""

    def encode(self, quote: str) -> tuple[bytes, bytes] | None:
        """(pattern, target) bytes with the same equalities as (quote, text); None when impossible."""
        if self._shared is not None:
            absent = _CODES - 1
            return bytes(self._shared.get(c, absent) for c in quote), self._bytes
        alphabet = sorted(set(quote))
        if len(alphabet) >= _CODES:
            return None
        codes = {c: i + 1 for i, c in enumerate(alphabet)}
        return bytes(map(codes.__getitem__, quote)), bytes(codes.get(c, 0) for c in self.text)


def _approximate(encoded: _Encoded, quote: str) -> list[tuple[int, int]]:
    """The substrings of the text at the smallest edit distance from ``quote``, if within the ratio."""
    errors = int(len(quote) * MAX_ERROR_RATIO)
    pair = encoded.encode(quote) if errors > 0 else None
    if pair is None or not pair[1]:
        return []
    found = edlib.align(*pair, mode="HW", task="locations", k=errors)
    if found["editDistance"] < 0:
        return []
    return [(start, end + 1) for start, end in found["locations"][:MAX_CANDIDATES]]


def _context(text: str, selector: Selector, start: int, end: int) -> int:
    before = text[max(0, start - len(selector.prefix)) : start]
    after = text[end : end + len(selector.suffix)]
    return _common_suffix(before, selector.prefix) + len(os.path.commonprefix([after, selector.suffix]))


def _common_suffix(a: str, b: str) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def _best(text: str, selector: Selector, candidates: list[tuple[int, int]]) -> tuple[int, int]:
    hint = selector.start

    def rank(span: tuple[int, int]) -> tuple[int, int, int, int]:
        distance = abs(span[0] - hint) if hint is not None else 0
        return (-_context(text, selector, *span), distance, span[0], span[1])

    return min(candidates, key=rank)
