"""Merging duplicates into the bookmark kept: pure, no I/O.

The kept bookmark receives the union of ``userTags`` (its own first, then the others' in order, by the
tag rule) and of ``collectionIds``, ``isFavorite`` if any had it, ``isArchived`` only if all had it,
the earliest ``clientSavedAt``, its own non-empty title and description else the first non-empty of
the others, and the notes joined by a blank line (each distinct text once).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime

from bookmarks.domain.model import Bookmark, dedupe
from bookmarks.domain.tags import normalize_user_tags

__all__ = ["merged", "sort_time"]


def sort_time(record: Bookmark) -> datetime:
    """When the person saved it: ``clientSavedAt``, else when the server first had it."""
    return record.client_saved_at or record.created_at


def merged(keep: Bookmark, others: Sequence[Bookmark], position: datetime) -> Bookmark:
    """``keep`` with what the others add; ValueError when the union breaks a rule (more than 50 tags)."""
    everyone = (keep, *others)
    saved = [r.client_saved_at for r in everyone if r.client_saved_at is not None]
    notes = dedupe(note.strip() for r in everyone if r.notes and (note := r.notes).strip())
    return replace(
        keep,
        user_tags=normalize_user_tags([tag for r in everyone for tag in r.user_tags]),
        collection_ids=dedupe(c for r in everyone for c in r.collection_ids),
        is_favorite=any(r.is_favorite for r in everyone),
        is_archived=all(r.is_archived for r in everyone),
        client_saved_at=min(saved) if saved else None,
        title=_first_text(r.title for r in everyone),
        description=_first_text(r.description for r in everyone),
        notes="\n\n".join(notes) or None,
        updated_at=position,
    )


def _first_text(values: Iterable[str | None]) -> str | None:
    return next((value for value in values if value and value.strip()), None)
