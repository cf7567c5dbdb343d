"""Validation of client-written values: the server's limits, mirrored so a write the server would refuse
never enters the offline queue.

Each check takes the field's wire name and a value and returns the value in wire form (or raises
``ValueError``). :class:`Writable` attaches a check to a field of :class:`~bookmark_client.models.Bookmark`
or :class:`~bookmark_client.models.Collection`: that annotation is the one place that makes a field
client-writable (``merge.CLIENT_FIELDS``, ``merge.COLLECTION_FIELDS`` and ``merge.HIGHLIGHT_FIELDS`` are
derived from it).
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "HIGHLIGHT_COLORS",
    "ID_PATTERN",
    "MAX_COLLECTION_NAME",
    "MAX_HIGHLIGHT_CONTEXT",
    "MAX_HIGHLIGHT_NOTE",
    "MAX_HIGHLIGHT_QUOTE",
    "MAX_OFFSET",
    "MAX_URL_LENGTH",
    "MAX_USER_TAG_LENGTH",
    "MAX_USER_TAGS",
    "Check",
    "Writable",
    "bookmark_ref",
    "boolean",
    "collection_id",
    "collection_ids",
    "collection_name",
    "date",
    "highlight_color",
    "highlight_context",
    "highlight_note",
    "highlight_quote",
    "integer",
    "nullable_text",
    "offset",
    "one_of",
    "parent_id",
    "record_id",
    "strings",
    "timestamp",
    "url",
    "user_tags",
]

Check = Callable[[str, Any], Any]

# The server's id rule (common.validation.CLIENT_ID_PATTERN), copied: the client does not depend on the
# server's libraries. tests/unit/test_id_pattern.py holds the two equal.
ID_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
MAX_URL_LENGTH = 2048
MAX_USER_TAGS = 50
MAX_USER_TAG_LENGTH = 64
MAX_COLLECTION_NAME = 200
MAX_COLLECTION_IDS = 1000  # per bookmark
# The server's bounds of a field declared without a rule of its own (a text, a list of texts, an integer).
MAX_TEXT = 10_000
MAX_LIST_ITEMS = 1000
_INT_RANGE = range(-(2**63), 2**63)
# Highlights: the server's limits (docs/api-guide.md, section 16).
MAX_HIGHLIGHT_QUOTE = 5_000  # after trimming
MAX_HIGHLIGHT_CONTEXT = 64  # prefix, suffix
MAX_HIGHLIGHT_NOTE = 10_000
MAX_OFFSET = 10_000_000  # start, end: code points in the page's readable text
HIGHLIGHT_COLORS = ("yellow", "green", "blue", "pink", "purple")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Writable:
    """Marks a model field as written by clients; ``check`` validates and normalizes a value of it."""

    check: Check


def record_id(kind: str, value: Any) -> str:
    # The server refuses other ids with 400 (docs/api-guide.md, sections 3 and 11).
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise ValueError(f"{kind} id must match {ID_PATTERN.pattern}: {value!r}")
    return value


def collection_id(value: Any) -> str:
    return record_id("collection", value)


def url(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string")
    if len(value) > MAX_URL_LENGTH:
        raise ValueError(f"{name} is longer than {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(value)
        host = parts.hostname
    except ValueError as exc:
        raise ValueError(f"{name} is not parseable: {exc}") from None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise ValueError(f"{name} must be an http: or https: URL with a host")
    return value


def nullable_text(limit: int | None) -> Check:
    def check(name: str, value: Any) -> str | None:
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{name} must be a string or None")
        if value is not None and limit is not None and len(value) > limit:
            raise ValueError(f"{name} is longer than {limit} characters")
        return None if value is None else _no_nul(name, value)

    return check


def timestamp(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return moment.isoformat()
    if isinstance(value, str):
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{name} must be an ISO 8601 timestamp") from None
        return value
    raise ValueError(f"{name} must be an ISO 8601 string or a datetime")


def integer(name: str, value: Any) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value not in _INT_RANGE):
        raise ValueError(f"{name} must be a 64-bit integer or None")
    return value


def date(name: str, value: Any) -> str | None:
    """A calendar date as ``YYYY-MM-DD`` (a ``datetime.date`` is written so)."""
    if value is None:
        return None
    if isinstance(value, dt.date) and not isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, str) and _DATE.fullmatch(value):
        try:
            dt.date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{name} is not a calendar date") from None
        return value
    raise ValueError(f"{name} must be a YYYY-MM-DD date or a datetime.date")


def one_of(values: tuple[str, ...]) -> Check:
    def check(name: str, value: Any) -> str | None:
        if value is None:
            return None
        if value not in values:
            raise ValueError(f"{name} must be one of {', '.join(values)}")
        return str(value)

    return check


def strings(name: str, value: Any) -> list[str] | None:
    if value is None:
        return None
    items = _string_list(name, value)
    if not all(isinstance(item, str) and len(item) <= MAX_TEXT for item in items) or len(items) > MAX_LIST_ITEMS:
        raise ValueError(f"{name}: at most {MAX_LIST_ITEMS} strings of at most {MAX_TEXT} characters")
    return [_no_nul(name, item) for item in items]


def boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be a bool")
    return value


def _string_list(name: str, value: Any) -> list[Any]:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise ValueError(f"{name} must be a list of strings")
    return list(value)


def collection_ids(name: str, value: Any) -> list[str]:
    ids = _string_list(name, value)
    if not all(isinstance(item, str) and 0 < len(item) <= 256 for item in ids):
        raise ValueError(f"{name} must be non-empty strings of at most 256 characters")
    if len(ids) > MAX_COLLECTION_IDS:
        raise ValueError(f"{name}: at most {MAX_COLLECTION_IDS} collections")
    return [_no_nul(name, item) for item in ids]


def _has_control(text: str) -> bool:
    # Cc: C0/C1 controls (NUL, newline, ...); Cs: lone surrogates, which cannot be stored as UTF-8.
    return any(unicodedata.category(char) in ("Cc", "Cs") for char in text)


def _no_nul(name: str, text: str) -> str:
    # The server refuses NUL in any client text (PostgreSQL cannot store it).
    if "\x00" in text:
        raise ValueError(f"{name} must not contain NUL characters")
    return text


def user_tags(name: str, value: Any) -> list[str]:
    """Trimmed, 1-64 characters, no control characters, deduplicated case-insensitively keeping the
    first spelling and the order, at most 50 (docs/api-guide.md, section 11). A bad tag is refused, never dropped."""
    tags: list[str] = []
    seen: set[str] = set()
    for item in _string_list(name, value):
        if not isinstance(item, str):
            raise ValueError(f"{name} must be a list of strings")
        tag = item.strip()
        if not tag or len(tag) > MAX_USER_TAG_LENGTH or _has_control(tag):
            raise ValueError(f"{name}: each tag must be 1-{MAX_USER_TAG_LENGTH} characters without control characters")
        if tag.casefold() not in seen:
            seen.add(tag.casefold())
            tags.append(tag)
    if len(tags) > MAX_USER_TAGS:
        raise ValueError(f"{name}: at most {MAX_USER_TAGS} distinct tags")
    return tags


def collection_name(name: str, value: Any) -> str:
    if not isinstance(value, str) or len(value) > 1000:
        # The server caps the raw input too (1,000 characters before trimming).
        raise ValueError(f"{name} must be a string of at most 1000 characters")
    text = value.strip()
    if not 1 <= len(text) <= MAX_COLLECTION_NAME:
        raise ValueError(f"{name} must be 1-{MAX_COLLECTION_NAME} characters after trimming")
    return _no_nul(name, text)


def parent_id(name: str, value: Any) -> str | None:
    return None if value is None else record_id("parent collection", value)


def bookmark_ref(name: str, value: Any) -> str:
    """The ``clientBookmarkId`` a record belongs to."""
    return record_id(name, value)


def highlight_quote(name: str, value: Any) -> str:
    """The marked text, trimmed as the server stores it: 1-5,000 characters."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string")
    text = value.strip()
    if not 1 <= len(text) <= MAX_HIGHLIGHT_QUOTE:
        raise ValueError(f"{name} must be 1-{MAX_HIGHLIGHT_QUOTE} characters after trimming")
    return _no_nul(name, text)


def highlight_context(name: str, value: Any) -> str:
    """Text right before or after a quote, as given (None: none), at most 64 characters."""
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > MAX_HIGHLIGHT_CONTEXT:
        raise ValueError(f"{name} must be a string of at most {MAX_HIGHLIGHT_CONTEXT} characters")
    return _no_nul(name, value)


def highlight_note(name: str, value: Any) -> str:
    """The user's note on a highlight (None: none), at most 10,000 characters."""
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > MAX_HIGHLIGHT_NOTE:
        raise ValueError(f"{name} must be a string of at most {MAX_HIGHLIGHT_NOTE} characters")
    return _no_nul(name, value)


def highlight_color(name: str, value: Any) -> str:
    if value not in HIGHLIGHT_COLORS:
        raise ValueError(f"{name} must be one of {', '.join(HIGHLIGHT_COLORS)}")
    return str(value)


def offset(name: str, value: Any) -> int | None:
    """A character offset in a page's readable text, or None."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_OFFSET):
        raise ValueError(f"{name} must be an integer within 0..{MAX_OFFSET} or None")
    return value
