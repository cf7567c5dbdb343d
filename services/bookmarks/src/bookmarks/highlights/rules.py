"""Highlights (docs/api-guide.md, section 16): the frozen record and its write rules, without I/O."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from bookmarks.domain.model import _write_fields, record_from_row
from bookmarks.highlights.anchoring import Anchor, AnchorKind, Selector

MAX_QUOTE = 5_000
MAX_CONTEXT = 64
MAX_NOTE = 10_000
MAX_PER_BOOKMARK = 1_000
MAX_PER_USER = 100_000


class Color(enum.StrEnum):
    YELLOW = "yellow"
    GREEN = "green"
    BLUE = "blue"
    PINK = "pink"
    PURPLE = "purple"


class HighlightError(ValueError):
    """A highlight write that breaks a rule; the message is the client's."""


@dataclass(frozen=True, slots=True)
class Highlight:
    owner_uid: uuid.UUID
    highlight_id: str
    client_bookmark_id: str
    quote: str
    prefix: str
    suffix: str
    quote_start: int | None
    quote_end: int | None
    color: str
    note: str
    anchor: str | None
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None = None
    # Deleted together with its bookmark (at the bookmark's deletion time): a restore brings it back.
    with_bookmark: bool = False

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None

    @property
    def selector(self) -> Selector:
        return Selector(self.quote, self.prefix, self.suffix, self.quote_start, self.quote_end)

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> Highlight:
        return record_from_row(cls, row)

    def to_row(self) -> dict[str, Any]:
        return _write_fields(self)


@dataclass(frozen=True, slots=True)
class HighlightWrite:
    """A validated PUT body; None: absent."""

    bookmark_id: str
    quote: str
    prefix: str | None = None
    suffix: str | None = None
    start: int | None = None
    end: int | None = None
    color: Color | None = None
    note: str | None = None


_IMMUTABLE = (("bookmarkId", "client_bookmark_id", "bookmark_id"), ("quote", "quote", "quote"))
_IMMUTABLE_CONTEXT = (("prefix", "prefix"), ("suffix", "suffix"))


def _check_immutable(existing: Highlight, write: HighlightWrite) -> None:
    for wire, attr, given in _IMMUTABLE:
        if getattr(write, given) != getattr(existing, attr):
            raise HighlightError(f"{wire} cannot change after a highlight is created.")
    for wire, attr in _IMMUTABLE_CONTEXT:
        value = getattr(write, attr)
        if value is not None and value != getattr(existing, attr):
            raise HighlightError(f"{wire} cannot change after a highlight is created.")


def write_highlight(
    existing: Highlight | None, write: HighlightWrite, *, owner: uuid.UUID, highlight_id: str, position: datetime
) -> Highlight | None:
    """Create, revive or merge (only ``color`` and ``note`` change after creation); None when the write
    changes nothing (an idempotent retry). Raises :class:`HighlightError`."""
    if existing is None or existing.is_deleted:
        return _created(existing, write, owner=owner, highlight_id=highlight_id, position=position)
    _check_immutable(existing, write)
    color = write.color.value if write.color is not None else existing.color
    note = write.note if write.note is not None else existing.note
    if (color, note) == (existing.color, existing.note):
        return None
    return replace(existing, color=color, note=note, updated_at=position)


def _created(
    existing: Highlight | None, write: HighlightWrite, *, owner: uuid.UUID, highlight_id: str, position: datetime
) -> Highlight:
    if existing is not None and existing.client_bookmark_id != write.bookmark_id:
        raise HighlightError("bookmarkId cannot change after a highlight is created.")
    return Highlight(
        owner_uid=owner,
        highlight_id=highlight_id,
        client_bookmark_id=write.bookmark_id,
        quote=write.quote,
        prefix=write.prefix or "",
        suffix=write.suffix or "",
        quote_start=write.start,
        quote_end=write.end,
        color=(write.color or Color.YELLOW).value,
        note=write.note or "",
        anchor=None,
        created_at=existing.created_at if existing is not None else position,
        updated_at=position,
    )


def check_counts(*, on_bookmark: int, of_user: int) -> None:
    """Refuse a new highlight past a limit; the counts are the live ones before the write."""
    if on_bookmark >= MAX_PER_BOOKMARK:
        raise HighlightError(f"A bookmark holds at most {MAX_PER_BOOKMARK:,} highlights.")
    if of_user >= MAX_PER_USER:
        raise HighlightError(f"You can keep at most {MAX_PER_USER:,} highlights.")


def delete_highlight(
    existing: Highlight | None, owner: uuid.UUID, highlight_id: str, position: datetime
) -> Highlight | None:
    """Tombstone; None when there is nothing to delete. An unknown id leaves nothing behind: a highlight
    belongs to a bookmark, and no device can hold one the server never had."""
    if existing is None or (existing.is_deleted and not existing.with_bookmark):
        return None
    if existing.is_deleted:  # deleted with its bookmark and now on purpose: a restore leaves it deleted
        return replace(existing, with_bookmark=False)
    return replace(existing, updated_at=position, deleted_at=position, with_bookmark=False)


def deleted_with_bookmark(record: Highlight, position: datetime, deleted_at: datetime) -> Highlight:
    return replace(record, updated_at=position, deleted_at=deleted_at, with_bookmark=True)


def restored(record: Highlight, position: datetime) -> Highlight:
    return replace(record, updated_at=position, deleted_at=None, with_bookmark=False)


def moved_to_bookmark(record: Highlight, client_bookmark_id: str, position: datetime) -> Highlight:
    """A duplicates merge gives the kept bookmark the merged ones' highlights."""
    return replace(record, client_bookmark_id=client_bookmark_id, updated_at=position)


def incoming_wins(existing: Highlight | None, incoming: Highlight) -> bool:
    return existing is None or existing.updated_at < incoming.updated_at


def moved_to_user(record: Highlight, target: uuid.UUID, position: datetime) -> Highlight:
    return replace(record, owner_uid=target, updated_at=position)


def at(record: Highlight, position: datetime) -> Highlight:
    return replace(record, updated_at=position)


def anchored(record: Highlight, found: Anchor, position: datetime) -> Highlight | None:
    """The record placed where :func:`~bookmarks.highlights.anchoring.anchor` found it (an orphan has no
    offsets in the current text); None when nothing moved."""
    kind: AnchorKind = found.kind
    if (kind, found.start, found.end) == (record.anchor, record.quote_start, record.quote_end):
        return None
    return replace(record, anchor=kind, quote_start=found.start, quote_end=found.end, updated_at=position)
