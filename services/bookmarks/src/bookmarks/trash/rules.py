"""What the trash holds and what restoring or purging does to a record: pure, no I/O.

A deleted bookmark keeps its last state in its tombstone row; it is in the trash while that state is
there (``url`` set) and its deletion is younger than the retention. Purging empties the state and keeps
the tombstone, which every device may still need to apply.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from bookmarks.domain.model import Bookmark

__all__ = ["in_trash", "purge_at", "purged", "restored", "retention_cutoff"]


def retention_cutoff(now: datetime, retention: timedelta) -> datetime:
    """Deletions at or before this instant are past the retention."""
    return now - retention


def in_trash(record: Bookmark, *, now: datetime, retention: timedelta) -> bool:
    return record.deleted_at is not None and bool(record.url) and record.deleted_at > retention_cutoff(now, retention)


def purge_at(record: Bookmark, retention: timedelta) -> datetime:
    assert record.deleted_at is not None
    return record.deleted_at + retention


def restored(record: Bookmark, position: datetime) -> Bookmark:
    """Live again with the state it had when deleted, at a new stream position."""
    return replace(record, deleted_at=None, updated_at=position)


def purged(record: Bookmark) -> Bookmark:
    """The tombstone alone: ids and times kept, everything the user wrote or enrichment found dropped."""
    assert record.deleted_at is not None
    return Bookmark(
        owner_uid=record.owner_uid,
        client_bookmark_id=record.client_bookmark_id,
        url="",
        normalized_url="",
        domain="",
        created_at=record.created_at,
        updated_at=record.updated_at,
        deleted_at=record.deleted_at,
    )
