"""How the local view of a bookmark is computed: pure functions, no I/O.

Each bookmark keeps two things locally: the *base*, the last copy the server sent (delta upsert,
tombstone or the answer to one of our writes), and the queued operations not yet accepted by the
server. What the user sees is ``materialize(base, ops)``: the queued operations replayed on top of
the base, in queue order.

That one rule gives the conflict behaviour the spec asks for:

- Server-authoritative enrichment fields (summary, saveWhy, tags, enrichmentStatus, snapshotStatus,
  lastErrorCode, enrichedAt, and title/description/thumbnailUrl once enrichment overwrote them) come
  from the base, so they are always taken from the server: no queued operation ever writes them.
- A queued edit of a client field is re-applied over every newer base, so a server copy fetched
  before the edit was flushed cannot hide it. That includes a queued ``title``: when the queued PUT
  reaches the server it overwrites the enriched title there too (PUT merges, decisions.md §4.2), so
  showing the server's title meanwhile would only flicker.
- Once an operation is accepted (or rejected) it leaves the queue and the server's copy rules again;
  a rejected edit is therefore rolled back locally instead of lingering forever.

Records are plain dicts with the spec's camelCase field names plus ``deleted``/``deletedAt``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from bookmark_client.models import QueuedOp

__all__ = [
    "CLIENT_FIELDS",
    "collection_ids",
    "base_after_sent",
    "base_from_tombstone",
    "base_from_upsert",
    "apply_op",
    "materialize",
    "normalize_fields",
    "now_iso",
    "validate_bookmark_id",
]

# Fields a client may write with PUT /v1/bookmarks/{id} (spec: PUT body), in their wire spelling.
CLIENT_FIELDS: tuple[str, ...] = (
    "url",
    "clientSavedAt",
    "title",
    "description",
    "thumbnailUrl",
    "isFavorite",
    "notes",
    "lastOpenedAt",
    "collectionIds",
)
_SNAKE_NAMES = {
    "client_saved_at": "clientSavedAt",
    "thumbnail_url": "thumbnailUrl",
    "is_favorite": "isFavorite",
    "last_opened_at": "lastOpenedAt",
    "collection_ids": "collectionIds",
}
_NULLABLE_TEXT = {"title": 1000, "description": None, "thumbnailUrl": 2048, "notes": 10_000}
_TIMESTAMPS = ("clientSavedAt", "lastOpenedAt")
_ID_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
MAX_URL_LENGTH = 2048


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def validate_bookmark_id(bookmark_id: str) -> str:
    # The server refuses other ids with 400 (decisions.md §4.1); failing here keeps them out of the queue.
    if not isinstance(bookmark_id, str) or not _ID_PATTERN.fullmatch(bookmark_id):
        raise ValueError(f"bookmark id must match {_ID_PATTERN.pattern}: {bookmark_id!r}")
    return bookmark_id


def _validate_url(url: Any) -> str:
    if not isinstance(url, str):
        raise ValueError("url must be a string")
    if len(url) > MAX_URL_LENGTH:
        raise ValueError(f"url is longer than {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        raise ValueError(f"url is not parseable: {exc}") from None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise ValueError("url must be an http: or https: URL with a host")
    return url


def _timestamp(name: str, value: Any) -> str | None:
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


def normalize_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Validate client-writable fields (wire or snake_case names) and return them in wire form.

    Mirrors the server's limits so that a write the server would refuse never enters the queue.
    """
    out: dict[str, Any] = {}
    for key, value in fields.items():
        name = _SNAKE_NAMES.get(key, key)
        if name not in CLIENT_FIELDS:
            raise ValueError(f"{key!r} is not a client-writable field (allowed: {', '.join(CLIENT_FIELDS)})")
        if name == "url":
            out[name] = _validate_url(value)
        elif name in _NULLABLE_TEXT:
            limit = _NULLABLE_TEXT[name]
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name} must be a string or None")
            if value is not None and limit is not None and len(value) > limit:
                raise ValueError(f"{name} is longer than {limit} characters")
            out[name] = value
        elif name in _TIMESTAMPS:
            out[name] = _timestamp(name, value)
        elif name == "isFavorite":
            if not isinstance(value, bool):
                raise ValueError("isFavorite must be a bool")
            out[name] = value
        else:  # collectionIds
            out[name] = collection_ids(value)
    return out


def collection_ids(value: Any) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValueError("collectionIds must be a list of strings")
    ids = list(value)
    if not all(isinstance(item, str) and 0 < len(item) <= 256 for item in ids):
        raise ValueError("collectionIds must be non-empty strings of at most 256 characters")
    return ids


def _provisional_host(url: str) -> str | None:
    # Shown until the server's normalized domain arrives; the server's value replaces it on sync.
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    if host is None:
        return None
    return host[4:] if host.startswith("www.") else host


def skeleton(bookmark_id: str, *, owner: str | None, at: str) -> dict[str, Any]:
    """Defaults of a bookmark the server has not seen yet (spec: "A newly created bookmark has...")."""
    return {
        "ownerUid": owner,
        "clientBookmarkId": bookmark_id,
        "url": "",
        "normalizedUrl": None,
        "domain": None,
        "title": None,
        "description": None,
        "thumbnailUrl": None,
        "summary": None,
        "saveWhy": None,
        "tags": [],
        "enrichmentStatus": "pending",
        "snapshotStatus": "pending",
        "lastErrorCode": None,
        "isFavorite": False,
        "collectionIds": [],
        "notes": None,
        "clientSavedAt": None,
        "lastOpenedAt": None,
        "createdAt": at,
        "updatedAt": at,
        "enrichedAt": None,
        "deleted": False,
        "deletedAt": None,
    }


def apply_op(record: Mapping[str, Any] | None, op: QueuedOp, *, owner: str | None) -> dict[str, Any] | None:
    """The record after ``op``, the way the server will apply it (decisions.md §4.2-4.3)."""
    if op.kind == "put":
        fields: dict[str, Any] = op.payload["fields"]
        out = {**skeleton(op.bookmark_id, owner=owner, at=op.created_at), **(record or {})}
        if "url" in fields and (fields["url"] != out.get("url") or out.get("domain") is None):
            host = _provisional_host(fields["url"])
            out["domain"] = host
            out["normalizedUrl"] = fields["url"]
        out.update(fields)
        # A PUT on a soft-deleted bookmark revives it.
        out["deleted"] = False
        out["deletedAt"] = None
        return out
    if op.kind == "delete":
        if record is None:
            return None
        return {**record, "deleted": True, "deletedAt": record.get("deletedAt") or op.created_at}
    if op.kind == "collections":
        if record is None:
            return None
        return {**record, "collectionIds": list(op.payload["collectionIds"])}
    raise ValueError(f"unknown operation kind {op.kind!r}")


def materialize(base: Mapping[str, Any] | None, ops: Iterable[QueuedOp], *, owner: str | None) -> dict[str, Any] | None:
    """The local view: ``base`` with ``ops`` (this bookmark's queued writes) replayed in queue order."""
    record: dict[str, Any] | None = dict(base) if base is not None else None
    for op in sorted(ops, key=lambda o: o.seq):
        record = apply_op(record, op, owner=owner)
    return record


def base_from_upsert(server: Mapping[str, Any]) -> dict[str, Any]:
    return {**server, "deleted": False, "deletedAt": None}


def base_from_tombstone(previous: Mapping[str, Any] | None, tombstone: Mapping[str, Any]) -> dict[str, Any]:
    # Keep the last known fields: harmless for a deleted record and useful if a queued PUT revives it.
    bookmark_id = str(tombstone["clientBookmarkId"])
    return {
        **(previous or {"clientBookmarkId": bookmark_id}),
        "deleted": True,
        "deletedAt": tombstone.get("deletedAt"),
    }


def base_after_sent(
    base: Mapping[str, Any] | None, op: QueuedOp, response: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """The server's copy right after it accepted ``op`` (``response``: the PUT answer's ``data``)."""
    if op.kind == "put":
        if response is not None:
            return base_from_upsert(response)
        # No body to learn from (should not happen): the server applied exactly our fields.
        return apply_op(base, op, owner=None)
    if op.kind == "delete":
        return {
            **(base or {"clientBookmarkId": op.bookmark_id}),
            "deleted": True,
            "deletedAt": (base or {}).get("deletedAt") or now_iso(),
        }
    if op.kind == "collections":
        if base is None:
            return None
        return {**base, "collectionIds": list(op.payload["collectionIds"])}
    raise ValueError(f"unknown operation kind {op.kind!r}")
