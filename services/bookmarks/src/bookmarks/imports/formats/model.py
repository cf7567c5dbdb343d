"""What every import parser yields, and the pure rules that clean one item (docs/api-guide.md, sections 11 and 13).

Parsers never reject a whole file for one bad item: an item they cannot use carries a ``reason`` and the
rest of the file goes on. Values they can use but must shorten (a 2,000-character title, a folder 14
levels deep, a 70-character tag) are shortened and the change is recorded in ``warnings``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Final

from bookmarks.highlights.rules import MAX_CONTEXT, MAX_NOTE, MAX_PER_BOOKMARK, MAX_QUOTE, Color
from common.urls import MAX_URL_LENGTH, InvalidUrlError, normalize_url

__all__ = [
    "FORMATS",
    "MAX_COLLECTION_DEPTH",
    "ImportFormatError",
    "ImportHighlight",
    "ImportItem",
    "clean_highlight",
    "clean_path",
    "clean_tags",
    "clean_text",
    "from_unix",
    "parse_iso",
    "validate_item",
    "web_url",
    "with_highlights",
]

FORMATS: Final = ("netscape", "pocket-csv", "omnivore", "instapaper-csv", "raindrop-csv", "json")

MAX_COLLECTION_DEPTH: Final = 10  # ten levels are allowed, an eleventh is refused
MAX_COLLECTION_NAME: Final = 200
MAX_TAGS: Final = 50
MAX_TAG_LENGTH: Final = 64
MAX_TITLE: Final = 1000
MAX_NOTES: Final = 10_000
MAX_DESCRIPTION: Final = 10_000

_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]")
# Unix seconds between 1970 and 9999: anything else is not a date, whatever the file says.
_MAX_UNIX: Final = 253_402_300_799


class ImportFormatError(ValueError):
    """The whole file cannot be imported; ``str(error)`` is a message fit to show to the user."""


@dataclass(frozen=True, slots=True)
class ImportHighlight:
    """A highlight of an item as the file gives it (limits checked by :func:`clean_highlight`)."""

    quote: str
    note: str = ""
    prefix: str = ""
    suffix: str = ""
    start: int | None = None
    end: int | None = None
    color: str = Color.YELLOW.value


_COLORS: Final = frozenset(c.value for c in Color)


def clean_highlight(raw: ImportHighlight) -> ImportHighlight | str:
    """The highlight as the API would store it, or why it cannot be imported: the quote is trimmed and
    must keep 1-5,000 characters, the note at most 10,000 (nothing of the user's is cut). The context is
    kept to the 64 characters nearest the quote, offsets only as a valid pair, an unknown color is yellow."""
    quote = raw.quote.replace("\x00", "").strip()
    note = raw.note.replace("\x00", "").strip()
    if not quote:
        return "a highlight has no text"
    if len(quote) > MAX_QUOTE:
        return f"a highlight is longer than {MAX_QUOTE:,} characters"
    if len(note) > MAX_NOTE:
        return f"a highlight's note is longer than {MAX_NOTE:,} characters"
    start, end = raw.start, raw.end
    if start is None or end is None or not 0 <= start < end:
        start = end = None
    return replace(
        raw,
        quote=quote,
        note=note,
        prefix=raw.prefix.replace("\x00", "")[-MAX_CONTEXT:],
        suffix=raw.suffix.replace("\x00", "")[:MAX_CONTEXT],
        start=start,
        end=end,
        color=raw.color if raw.color in _COLORS else Color.YELLOW.value,
    )


def with_highlights(item: ImportItem, raw: list[ImportHighlight]) -> ImportItem:
    """``item`` with its highlights cleaned; invalid (naming why) when one of them breaks a limit, or
    when there are more than a bookmark may hold: an import never cuts a user's text."""
    if item.reason is not None or not raw:
        return item
    if len(raw) > MAX_PER_BOOKMARK:
        return invalid(item.line, item.url, f"The bookmark has more than {MAX_PER_BOOKMARK:,} highlights.")
    cleaned = []
    for number, highlight in enumerate(raw, start=1):
        result = clean_highlight(highlight)
        if isinstance(result, str):
            return invalid(item.line, item.url, f"Highlight {number}: {result}.")
        cleaned.append(result)
    return replace(item, highlights=tuple(cleaned))


@dataclass(frozen=True, slots=True)
class ImportItem:
    """One bookmark as a file describes it, before it meets the user's library.

    ``line`` is where the item starts (1-based line of the ``<A>`` tag or CSV record, header = line 1;
    for ZIP formats the 1-based position of the item in the export). ``ordinal`` is the 0-based index of
    the item in the parser's output (valid and invalid items alike), the resume point of a crashed job.
    ``None`` for ``is_favorite``/``is_archived`` means the file does not say; ``True``/``False`` means it
    does. ``reason`` is set exactly when the item is invalid.
    """

    line: int
    url: str
    ordinal: int = 0
    title: str | None = None
    description: str | None = None
    notes: str | None = None
    user_tags: tuple[str, ...] = ()
    collection_paths: tuple[tuple[str, ...], ...] = ()
    is_favorite: bool | None = None
    is_archived: bool | None = None
    saved_at: datetime | None = None
    last_opened_at: datetime | None = None
    thumbnail_url: str | None = None
    client_bookmark_id: str | None = None
    reason: str | None = None
    warnings: tuple[str, ...] = field(default=())
    normalized_url: str | None = None  # set by validate_item, so the importer normalizes each URL once
    domain: str | None = None
    highlights: tuple[ImportHighlight, ...] = ()

    @property
    def collection_path(self) -> tuple[str, ...]:
        """The first (for every format but ``json``, the only) collection path; ``()`` for none."""
        return self.collection_paths[0] if self.collection_paths else ()

    @property
    def valid(self) -> bool:
        return self.reason is None


def invalid(line: int, url: str, reason: str) -> ImportItem:
    return ImportItem(line=line, url=url[:MAX_URL_LENGTH], reason=reason)


def validate_item(item: ImportItem) -> ImportItem:
    """Mark ``item`` invalid unless its URL is a usable http(s) URL (docs/api-guide.md, section 7 normalization);
    a valid item gets its ``normalized_url`` and ``domain``."""
    return finish_item(item, item.ordinal, validate=True)


def finish_item(item: ImportItem, ordinal: int, *, validate: bool) -> ImportItem:
    """``item`` numbered ``ordinal`` and, with ``validate``, URL-checked: one copy, not two."""
    reason, normalized, domain = item.reason, None, None
    if validate and reason is None:
        reason, normalized, domain = check_url(item.url)
    url = item.url if reason is None else item.url[:MAX_URL_LENGTH]  # a report line stays small
    return replace(item, url=url, ordinal=ordinal, reason=reason, normalized_url=normalized, domain=domain)


def check_url(url: str) -> tuple[str | None, str | None, str | None]:
    """(reason, normalized URL, domain): a reason when ``url`` is no usable http(s) URL."""
    if not url.strip():
        return "The item has no URL.", None, None
    try:
        normalized = normalize_url(url)
    except InvalidUrlError as exc:
        return str(exc), None, None
    return None, normalized.url, normalized.domain


def clean_text(value: str | None, limit: int, name: str, warnings: list[str]) -> str | None:
    """Strip ``value``; blank becomes ``None``; longer than ``limit`` is cut, noted in ``warnings``."""
    if value is None:
        return None
    text = value.replace("\x00", "").strip()
    if not text:
        return None
    if len(text) > limit:
        warnings.append(f"{name} shortened to {limit} characters")
        text = text[:limit].rstrip()
    return text


def clean_tags(raw: list[str], warnings: list[str]) -> tuple[str, ...]:
    """The userTags rules, repaired rather than refused: blanks dropped, control characters removed,
    cut to 64 characters, case-insensitive duplicates dropped keeping the first spelling, at most 50."""
    seen: dict[str, str] = {}
    for tag in raw:
        text = _CONTROL.sub("", tag).strip()
        if not text:
            continue
        if len(text) > MAX_TAG_LENGTH:
            warnings.append(f"tag shortened to {MAX_TAG_LENGTH} characters")
            text = text[:MAX_TAG_LENGTH].rstrip()
        seen.setdefault(text.casefold(), text)
    tags = tuple(seen.values())
    if len(tags) > MAX_TAGS:
        warnings.append(f"only the first {MAX_TAGS} of {len(tags)} tags kept")
        tags = tags[:MAX_TAGS]
    return tags


def clean_path(names: list[str], warnings: list[str], *, extra_depth: int = 0) -> tuple[str, ...]:
    """A collection name path: blank names dropped, names cut to 200 characters, at most 10 levels.

    A deeper path keeps its first 10 levels (the item lands in its 10th-level ancestor) and says so in
    ``warnings``; ``extra_depth`` counts levels a parser did not even keep in memory.
    """
    path: list[str] = []
    for name in names:
        text = _CONTROL.sub(" ", name).strip()
        if not text:
            continue
        path.append(text[:MAX_COLLECTION_NAME].rstrip())
    depth = len(path) + extra_depth
    if depth > MAX_COLLECTION_DEPTH:
        warnings.append(f"folder nested {depth} levels deep; kept its first {MAX_COLLECTION_DEPTH} levels")
        path = path[:MAX_COLLECTION_DEPTH]
    return tuple(path)


def web_url(value: object) -> str | None:
    """``value`` when it is an http(s) URL of at most 2,048 characters (thumbnails, covers), else ``None``."""
    if not isinstance(value, str) or len(value) > MAX_URL_LENGTH:
        return None
    text = value.strip()
    return text if text.lower().startswith(("http://", "https://")) else None


def from_unix(raw: str | None) -> datetime | None:
    """Unix seconds (as Pocket, Instapaper and browsers write them) → UTC datetime; junk → ``None``.

    Some exporters write milliseconds or microseconds (Chrome's own JSON, a few tools' HTML); a value
    too large for seconds is scaled down until it fits.
    """
    if raw is None:
        return None
    text = raw.strip()
    if not text or len(text) > 20 or not text.isdigit():
        return None
    value = int(text)
    while value > _MAX_UNIX:
        value //= 1000
    try:
        return datetime.fromtimestamp(value, tz=UTC) if value > 0 else None
    except (OverflowError, OSError, ValueError):
        return None


def parse_iso(raw: object) -> datetime | None:
    """ISO 8601 (``2024-10-30T12:39:28.023Z``) → aware UTC datetime; naive means UTC; junk → ``None``."""
    if not isinstance(raw, str) or not raw.strip() or len(raw) > 64:
        return None
    text = raw.strip()
    if text.isdigit():
        return from_unix(text)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: year 1 or 9999 moved out of range by its offset
        return None
