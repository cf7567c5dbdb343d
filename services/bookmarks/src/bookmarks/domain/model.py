"""The bookmark as the API and delta stream show it, and the rules for merging a client write."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

CLIENT_BOOKMARK_ID_RE = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")

# Client-writable fields: API name -> column.
CLIENT_FIELDS: dict[str, str] = {
    "url": "url",
    "clientSavedAt": "client_saved_at",
    "title": "title",
    "description": "description",
    "thumbnailUrl": "thumbnail_url",
    "isFavorite": "is_favorite",
    "notes": "notes",
    "lastOpenedAt": "last_opened_at",
    "collectionIds": "collection_ids",
}

# Cleared when a write changes the normalized URL: they described the old page (decisions.md §4.2).
ENRICHMENT_RESET: dict[str, Any] = {
    "summary": None,
    "save_why": None,
    "tags": [],
    "enrichment_status": "pending",
    "snapshot_status": "pending",
    "last_error_code": None,
    "enriched_at": None,
    "title": None,
    "description": None,
    "thumbnail_url": None,
}

COLUMNS = (
    "owner_uid", "client_bookmark_id", "url", "normalized_url", "domain", "title", "description",
    "thumbnail_url", "summary", "save_why", "tags", "enrichment_status", "snapshot_status",
    "last_error_code", "is_favorite", "collection_ids", "notes", "client_saved_at", "last_opened_at",
    "created_at", "updated_at", "enriched_at", "deleted_at",
)


def iso(ts: datetime | None) -> str | None:
    # Microseconds always: positions one microsecond apart must stay distinguishable to clients.
    return ts.isoformat(timespec="microseconds").replace("+00:00", "Z") if ts is not None else None


def to_api(row: Any, *, is_pro: bool) -> dict[str, Any]:
    """Bookmark resource of the spec; ``saveWhy`` is Pro-gated (decisions.md §4.5)."""
    return {
        "ownerUid": str(row["owner_uid"]),
        "clientBookmarkId": row["client_bookmark_id"],
        "url": row["url"],
        "normalizedUrl": row["normalized_url"],
        "domain": row["domain"],
        "title": row["title"],
        "description": row["description"],
        "thumbnailUrl": row["thumbnail_url"],
        "summary": row["summary"],
        "saveWhy": row["save_why"] if is_pro else None,
        "tags": list(row["tags"] or []),
        "enrichmentStatus": row["enrichment_status"],
        "snapshotStatus": row["snapshot_status"],
        "lastErrorCode": row["last_error_code"],
        "isFavorite": row["is_favorite"],
        "collectionIds": list(row["collection_ids"] or []),
        "notes": row["notes"],
        "clientSavedAt": iso(row["client_saved_at"]),
        "lastOpenedAt": iso(row["last_opened_at"]),
        "createdAt": iso(row["created_at"]),
        "updatedAt": iso(row["updated_at"]),
        "enrichedAt": iso(row["enriched_at"]),
    }


def to_tombstone(row: Any) -> dict[str, Any]:
    return {"clientBookmarkId": row["client_bookmark_id"], "deletedAt": iso(row["deleted_at"])}


def dedupe(ids: list[str]) -> list[str]:
    return list(dict.fromkeys(ids))
