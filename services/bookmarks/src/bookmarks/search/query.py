"""The search query language (docs/api-guide.md, section 12) parsed into a typed, frozen AST.

Grammar (whitespace separates terms; quotes are ``"`` or the typographic ``“ ” „``, any of them closes)::

    term    := ["-"] (filter | phrase | word)
    filter  := name ":" (phrase | bare)        name = tag|domain|collection|is|has|link|after|before, any case
    phrase  := quote ... quote
    word    := any run of non-space, non-quote characters

Words and phrases are stored folded (:func:`bookmarks.search.folding.fold`). A word or phrase without a
letter or digit (``-``, ``...``, ``""``) is dropped; ``scheme://...`` and ``12:30`` are words, not filters.
Bounds: ``q`` at most :data:`MAX_QUERY_CHARS` characters and :data:`MAX_TERMS` terms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum
from typing import Final, Literal

from bookmarks.search.folding import fold
from common.errors import InvalidRequest
from common.urls import InvalidUrlError, normalize_url

MAX_QUERY_CHARS: Final = 500
MAX_TERMS: Final = 20
MAX_FILTER_VALUE_CHARS: Final = 200
_QUOTES: Final = '"“”„'
_FILTER_NAME = re.compile(r"([A-Za-z]+):")
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_SHOWN_CHARS: Final = 60
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")  # PostgreSQL text cannot hold them


class InvalidQuery(InvalidRequest):
    """400 ``invalid-request`` naming the offending ``part`` of ``q``."""

    def __init__(self, reason: str, part: str | None = None) -> None:
        self.part = part
        shown = part if part is None or len(part) <= _SHOWN_CHARS else part[:_SHOWN_CHARS] + "…"
        super().__init__(f"q: {reason}" if shown is None else f"q: {reason}: {shown!r}")


class Flag(StrEnum):
    FAVORITE = "favorite"
    ARCHIVED = "archived"
    UNREAD = "unread"
    ENRICHED = "enriched"
    PENDING = "pending"
    FAILED = "failed"
    BROKEN = "broken"  # the link is gone or unreachable (docs/api-guide.md, section 15)


class LinkHealth(StrEnum):
    """The values of ``link:`` (a bookmark's ``linkStatus``)."""

    OK = "ok"
    MOVED = "moved"
    GONE = "gone"
    BLOCKED = "blocked"
    UNREACHABLE = "unreachable"


@dataclass(frozen=True, slots=True)
class TagFilter:
    tag: str  # folded


@dataclass(frozen=True, slots=True)
class DomainFilter:
    host: str  # as bookmarks store it: IDNA ASCII, lower case, no "www."


@dataclass(frozen=True, slots=True)
class CollectionFilter:
    collection_id: str


@dataclass(frozen=True, slots=True)
class FlagFilter:
    flag: Flag


class Has(StrEnum):
    """The values of ``has:``."""

    HIGHLIGHTS = "highlights"  # at least one live highlight


@dataclass(frozen=True, slots=True)
class HasFilter:
    what: Has


@dataclass(frozen=True, slots=True)
class LinkFilter:
    status: LinkHealth


@dataclass(frozen=True, slots=True)
class DateFilter:
    bound: Literal["after", "before"]  # after: day inclusive; before: day exclusive (UTC days)
    day: date


Filter = TagFilter | DomainFilter | CollectionFilter | FlagFilter | HasFilter | LinkFilter | DateFilter


@dataclass(frozen=True, slots=True)
class Condition:
    filter: Filter
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Query:
    words: tuple[str, ...] = ()
    phrases: tuple[str, ...] = ()
    excluded_words: tuple[str, ...] = ()
    excluded_phrases: tuple[str, ...] = ()
    conditions: tuple[Condition, ...] = field(default=())

    @property
    def has_text(self) -> bool:
        """Whether results are ranked by relevance (and get snippets): a required word or phrase."""
        return bool(self.words or self.phrases)

    def canonical(self) -> str:
        """One text per meaning (case, accents, spacing and quote style removed); cursors bind to it."""
        parts = [*self.words, *(f'"{p}"' for p in self.phrases)]
        parts += [f"-{w}" for w in self.excluded_words] + [f'-"{p}"' for p in self.excluded_phrases]
        parts += [_render_condition(c) for c in self.conditions]
        return " ".join(parts)


def _render_condition(condition: Condition) -> str:
    sign = "-" if condition.negated else ""
    match condition.filter:
        case TagFilter(tag):
            return f'{sign}tag:"{tag}"'
        case DomainFilter(host):
            return f"{sign}domain:{host}"
        case CollectionFilter(collection_id):
            return f'{sign}collection:"{collection_id}"'
        case FlagFilter(flag):
            return f"{sign}is:{flag.value}"
        case HasFilter(what):
            return f"{sign}has:{what.value}"
        case LinkFilter(status):
            return f"{sign}link:{status.value}"
        case DateFilter(bound, day):
            return f"{sign}{bound}:{day.isoformat()}"


@dataclass(frozen=True, slots=True)
class _Token:
    text: str  # the term as written, for error messages
    negated: bool
    name: str | None  # filter name, lower case
    value: str
    quoted: bool


def parse_query(q: str | None) -> Query:
    """Parse ``q``; raise :class:`InvalidQuery` (400) naming the offending part."""
    if q is None or not q.strip():
        raise InvalidQuery("must not be missing, empty or blank")
    if len(q) > MAX_QUERY_CHARS:
        raise InvalidQuery(f"is longer than {MAX_QUERY_CHARS} characters")
    if _UNSTORABLE.search(q):
        raise InvalidQuery("must not contain NUL or unpaired surrogate characters")
    tokens = _tokenize(q)
    if len(tokens) > MAX_TERMS:
        raise InvalidQuery(f"has more than {MAX_TERMS} terms")
    query = _build(tokens)
    if query == Query():
        raise InvalidQuery("has no word, phrase or filter to search for", q.strip())
    return query


def _tokenize(q: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(q):
        if q[pos].isspace():
            pos += 1
            continue
        token, pos = _read_term(q, pos)
        tokens.append(token)
    return tokens


def _read_term(q: str, start: int) -> tuple[_Token, int]:
    pos = start
    negated = q[pos] == "-"
    if negated:
        pos += 1
    name = None
    match = _FILTER_NAME.match(q, pos)
    if match and not q.startswith("//", match.end()):
        name, pos = match.group(1).lower(), match.end()
    if pos < len(q) and q[pos] in _QUOTES:
        end = _closing_quote(q, pos)
        return _Token(q[start : end + 1], negated, name, q[pos + 1 : end], True), end + 1
    end = pos
    while end < len(q) and not q[end].isspace() and q[end] not in _QUOTES:
        end += 1
    return _Token(q[start:end], negated, name, q[pos:end], False), end


def _closing_quote(q: str, opening: int) -> int:
    for pos in range(opening + 1, len(q)):
        if q[pos] in _QUOTES:
            return pos
    raise InvalidQuery("has an unbalanced quote", q[opening:])


def _has_word_chars(text: str) -> bool:
    return any(c.isalnum() for c in text)


def _build(tokens: list[_Token]) -> Query:
    words: list[str] = []
    phrases: list[str] = []
    excluded_words: list[str] = []
    excluded_phrases: list[str] = []
    conditions: list[Condition] = []
    for token in tokens:
        if token.name is not None:
            conditions.append(Condition(_parse_filter(token), token.negated))
            continue
        text = " ".join(fold(token.value).split())
        if not _has_word_chars(text):
            continue
        target = (
            (excluded_phrases if token.quoted else excluded_words)
            if token.negated
            else (phrases if token.quoted else words)
        )
        target.append(text)
    return Query(tuple(words), tuple(phrases), tuple(excluded_words), tuple(excluded_phrases), tuple(conditions))


def _parse_filter(token: _Token) -> Filter:
    value = token.value.strip()
    if not value:
        raise InvalidQuery(f"filter {token.name}: needs a value", token.text)
    if len(value) > MAX_FILTER_VALUE_CHARS:
        raise InvalidQuery(f"filter value is longer than {MAX_FILTER_VALUE_CHARS} characters", token.text)
    match token.name:
        case "tag":
            return TagFilter(" ".join(fold(value).split()))
        case "domain":
            return DomainFilter(_parse_host(value, token))
        case "collection":
            return CollectionFilter(value)
        case "is":
            return FlagFilter(_parse_flag(value, token))
        case "has":
            return HasFilter(_parse_has(value, token))
        case "link":
            return LinkFilter(_parse_link(value, token))
        case "after" | "before":
            return DateFilter(token.name, _parse_day(value, token))
    raise InvalidQuery(f"unknown filter {token.name}", token.text)


def _parse_flag(value: str, token: _Token) -> Flag:
    try:
        return Flag(value.lower())
    except ValueError:
        known = ", ".join(f"is:{flag.value}" for flag in Flag)
        raise InvalidQuery(f"unknown is: value (known: {known})", token.text) from None


def _parse_has(value: str, token: _Token) -> Has:
    try:
        return Has(value.lower())
    except ValueError:
        known = ", ".join(f"has:{what.value}" for what in Has)
        raise InvalidQuery(f"unknown has: value (known: {known})", token.text) from None


def _parse_link(value: str, token: _Token) -> LinkHealth:
    try:
        return LinkHealth(value.lower())
    except ValueError:
        known = ", ".join(f"link:{status.value}" for status in LinkHealth)
        raise InvalidQuery(f"unknown link: value (known: {known})", token.text) from None


def _parse_day(value: str, token: _Token) -> date:
    if _DAY.fullmatch(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise InvalidQuery(f"{token.name}: needs a date YYYY-MM-DD", token.text)


def _parse_host(value: str, token: _Token) -> str:
    url = value if "://" in value else f"http://{value}"
    try:
        return normalize_url(url).domain
    except InvalidUrlError:
        raise InvalidQuery("domain: needs a host name", token.text) from None
