"""User tags (docs/api-guide.md, section 11): trimmed, 1-64 characters, no control characters, deduplicated
case-insensitively keeping the first spelling, order kept, at most 50."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

MAX_TAGS = 50
MAX_TAG_LENGTH = 64


def _has_control(text: str) -> bool:
    # Cc: C0/C1 controls (NUL, newline, ...); Cs: lone surrogates, which cannot be stored as UTF-8.
    return any(unicodedata.category(ch) in ("Cc", "Cs") for ch in text)


def tag_key(tag: str) -> str:
    """The identity of a tag: two tags with the same key are the same tag (``Straße`` and ``STRASSE``)."""
    return tag.strip().casefold()


def normalize_user_tags(items: Sequence[object]) -> tuple[str, ...]:
    """The stored form of a client's ``userTags``; raises ``ValueError`` (never drops a tag silently)."""
    kept: dict[str, str] = {}
    for item in items:
        if not isinstance(item, str):
            raise ValueError("every tag must be a string")
        tag = item.strip()
        if not tag:
            raise ValueError("a tag must not be empty or blank")
        if len(tag) > MAX_TAG_LENGTH:
            raise ValueError(f"a tag has at most {MAX_TAG_LENGTH} characters")
        if _has_control(tag):
            raise ValueError("a tag must not contain control characters")
        kept.setdefault(tag_key(tag), tag)
    if len(kept) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} distinct tags")
    return tuple(kept.values())
