"""How the local view of a bookmark, a collection or a highlight is computed: pure functions, no I/O.

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
  reaches the server it overwrites the enriched title there too (PUT merges, docs/api-guide.md, section 3), so
  showing the server's title meanwhile would only flicker.
- Once an operation is accepted (or rejected) it leaves the queue and the server's copy rules again;
  a rejected edit is therefore rolled back locally instead of lingering forever.

Collections (docs/api-guide.md, section 11) follow the same rule with their own operation kinds
(``collection-put``, ``collection-delete``): a queued rename or move shows over every newer server
copy until the server has it. The server-side effects of deleting a collection (children moved up, the
id removed from bookmarks) arrive through delta; until then :mod:`bookmark_client.tree` resolves them
for display.

Highlights follow the same rule too (``highlight-put``, ``highlight-delete``), with the server's own
merge: after creation a PUT changes only ``color`` and ``note``, so a queued PUT shows only those over a
newer server copy (whose offsets and ``anchor`` the server keeps correcting), and a PUT over a tombstone
creates the highlight again from the PUT alone. What the server does to the highlights of a bookmark
(deleted, restored or merged with it) arrives through delta; until then a highlight of a bookmark deleted
here reads as deleted (:mod:`bookmark_client.store`).

Which fields are client-written is declared once, on the models (``fields.Writable``); the lists
here are derived from them.

Records are plain dicts with the spec's camelCase field names plus ``deleted``/``deletedAt``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel

from bookmark_client import fields as f
from bookmark_client.models import COLLECTION_KINDS, HIGHLIGHT_KINDS, Bookmark, Collection, Highlight, QueuedOp

__all__ = [
    "CLIENT_FIELDS",
    "COLLECTION_FIELDS",
    "HIGHLIGHT_FIELDS",
    "HIGHLIGHT_IDENTITY",
    "apply_op",
    "base_after_sent",
    "base_from_collection_tombstone",
    "base_from_highlight_tombstone",
    "base_from_tombstone",
    "base_from_upsert",
    "collection_ids",
    "materialize",
    "normalize_collection_fields",
    "normalize_fields",
    "normalize_highlight_fields",
    "now_iso",
    "validate_bookmark_id",
    "validate_collection_id",
    "validate_highlight_id",
]

MAX_URL_LENGTH = f.MAX_URL_LENGTH


def _writable(model: type[BaseModel]) -> dict[str, tuple[str, f.Check]]:
    """Wire name -> (attribute name, check) of every field the model marks :class:`fields.Writable`."""
    out: dict[str, tuple[str, f.Check]] = {}
    for attribute, info in model.model_fields.items():
        for marker in info.metadata:
            if isinstance(marker, f.Writable):
                out[info.alias or attribute] = (attribute, marker.check)
    return out


_BOOKMARK_WRITABLE = _writable(Bookmark)
_COLLECTION_WRITABLE = _writable(Collection)
_HIGHLIGHT_WRITABLE = _writable(Highlight)

# Fields a client may write with PUT /v1/bookmarks/{id} (the PUT body), in their wire spelling:
# derived from the Bookmark model, so adding a field there is the only edit the client needs.
CLIENT_FIELDS: tuple[str, ...] = tuple(_BOOKMARK_WRITABLE)
# Fields of the PUT /v1/collections/{id} body (docs/api-guide.md, section 11).
COLLECTION_FIELDS: tuple[str, ...] = tuple(_COLLECTION_WRITABLE)
# Fields of the PUT /v1/highlights/{id} body (docs/api-guide.md, section 16).
HIGHLIGHT_FIELDS: tuple[str, ...] = tuple(_HIGHLIGHT_WRITABLE)
# Set when a highlight is created and never changed by a PUT (the server refuses a different value); every
# PUT carries them, since the server needs bookmarkId and quote each time.
HIGHLIGHT_IDENTITY: tuple[str, ...] = ("bookmarkId", "quote", "prefix", "suffix")
# What a PUT changes on a highlight that exists.
_HIGHLIGHT_MUTABLE = ("color", "note")
# Local bookkeeping, never sent by the server.
_LOCAL_ONLY = {"pending"}


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def validate_bookmark_id(bookmark_id: str) -> str:
    return f.record_id("bookmark", bookmark_id)


def validate_collection_id(collection_id: str) -> str:
    return f.record_id("collection", collection_id)


def validate_highlight_id(highlight_id: str) -> str:
    return f.record_id("highlight", highlight_id)


def _normalize(writable: dict[str, tuple[str, f.Check]], values: Mapping[str, Any]) -> dict[str, Any]:
    by_attribute = {attribute: wire for wire, (attribute, _) in writable.items()}
    out: dict[str, Any] = {}
    for key, value in values.items():
        name = by_attribute.get(key, key)
        if name not in writable:
            raise ValueError(f"{key!r} is not a client-writable field (allowed: {', '.join(writable)})")
        out[name] = writable[name][1](name, value)
    return out


def normalize_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Validate client-writable bookmark fields (wire or snake_case names) and return them in wire form.

    Mirrors the server's limits so that a write the server would refuse never enters the queue.
    """
    return _normalize(_BOOKMARK_WRITABLE, fields)


def normalize_collection_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a collection write (``name``, ``parentId``; snake_case accepted) into wire form."""
    return _normalize(_COLLECTION_WRITABLE, fields)


def normalize_highlight_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a highlight write (snake_case accepted) into wire form: the quote trimmed, ``start`` and
    ``end`` together or not at all, ``start`` before ``end``."""
    out = _normalize(_HIGHLIGHT_WRITABLE, fields)
    start, end = out.get("start"), out.get("end")
    if (start is None) != (end is None):
        raise ValueError("start and end come together (or neither)")
    if start is not None and end is not None and not start < end:
        raise ValueError("start must be before end")
    return out


def collection_ids(value: Any) -> list[str]:
    return f.collection_ids("collectionIds", value)


def _provisional_host(url: str) -> str | None:
    # Shown until the server's normalized domain arrives; the server's value replaces it on sync.
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    if host is None:
        return None
    return host[4:] if host.startswith("www.") else host


def _defaults(model: BaseModel) -> dict[str, Any]:
    return {k: v for k, v in model.model_dump(mode="json", by_alias=True).items() if k not in _LOCAL_ONLY}


def skeleton(bookmark_id: str, *, owner: str | None, at: str) -> dict[str, Any]:
    """Defaults of a bookmark the server has not seen yet (docs/api-guide.md, section 3)."""
    return _defaults(Bookmark(client_bookmark_id=bookmark_id, owner_uid=owner, created_at=at, updated_at=at))


def collection_skeleton(collection_id: str, *, at: str) -> dict[str, Any]:
    return _defaults(Collection(id=collection_id, created_at=at, updated_at=at))


def highlight_skeleton(highlight_id: str, *, at: str) -> dict[str, Any]:
    return _defaults(Highlight(id=highlight_id, created_at=at, updated_at=at))


def _deleted(record: Mapping[str, Any], at: str | None) -> dict[str, Any]:
    return {**record, "deleted": True, "deletedAt": record.get("deletedAt") or at}


def _apply_collection_op(record: Mapping[str, Any] | None, op: QueuedOp) -> dict[str, Any] | None:
    if op.kind == "collection-put":
        fields: dict[str, Any] = op.payload["fields"]
        fresh = collection_skeleton(op.bookmark_id, at=op.created_at)
        if record is None or record.get("deleted"):
            # A PUT on a deleted collection creates it again (docs/api-guide.md, section 11), without its old parent:
            # an absent parentId then means top level, as on the server.
            return {**fresh, **(record or {}), "parentId": None, **fields, "deleted": False, "deletedAt": None}
        return {**fresh, **record, **fields}
    return None if record is None else _deleted(record, op.created_at)


def _apply_highlight_op(record: Mapping[str, Any] | None, op: QueuedOp) -> dict[str, Any] | None:
    if op.kind == "highlight-put":
        fields: dict[str, Any] = op.payload["fields"]
        if record is None or record.get("deleted"):
            # Created, or created again over a tombstone: the PUT alone says what it is (absent fields take
            # their defaults, as on the server), keeping the first creation time.
            created = (record or {}).get("createdAt") or op.created_at
            return {**highlight_skeleton(op.bookmark_id, at=op.created_at), **fields, "createdAt": created}
        return {**record, **{name: fields[name] for name in _HIGHLIGHT_MUTABLE if name in fields}}
    return None if record is None else _deleted(record, op.created_at)


def apply_op(record: Mapping[str, Any] | None, op: QueuedOp, *, owner: str | None) -> dict[str, Any] | None:
    """The record after ``op``, the way the server will apply it (docs/api-guide.md, sections 3 and 11)."""
    if op.kind in COLLECTION_KINDS:
        return _apply_collection_op(record, op)
    if op.kind in HIGHLIGHT_KINDS:
        return _apply_highlight_op(record, op)
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
        return None if record is None else _deleted(record, op.created_at)
    if op.kind == "collections":
        if record is None:
            return None
        return {**record, "collectionIds": list(op.payload["collectionIds"])}
    raise ValueError(f"unknown operation kind {op.kind!r}")


def materialize(base: Mapping[str, Any] | None, ops: Iterable[QueuedOp], *, owner: str | None) -> dict[str, Any] | None:
    """The local view: ``base`` with ``ops`` (this record's queued writes) replayed in queue order."""
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


def base_from_collection_tombstone(previous: Mapping[str, Any] | None, tombstone: Mapping[str, Any]) -> dict[str, Any]:
    # The last known parentId stays: it tells where the server moved this collection's children.
    collection_id = str(tombstone["id"])
    return {
        **(previous or collection_skeleton(collection_id, at=str(tombstone.get("deletedAt")))),
        "deleted": True,
        "deletedAt": tombstone.get("deletedAt"),
    }


def base_from_highlight_tombstone(previous: Mapping[str, Any] | None, tombstone: Mapping[str, Any]) -> dict[str, Any]:
    # The last known fields stay: a restore of its bookmark brings the highlight back as an upsert anyway.
    highlight_id = str(tombstone["id"])
    return {
        **(previous or highlight_skeleton(highlight_id, at=str(tombstone.get("deletedAt")))),
        "deleted": True,
        "deletedAt": tombstone.get("deletedAt"),
    }


def base_after_sent(
    base: Mapping[str, Any] | None, op: QueuedOp, response: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """The server's copy right after it accepted ``op`` (``response``: the PUT answer's ``data``)."""
    if op.kind in ("put", "collection-put", "highlight-put"):
        if response is not None:
            return base_from_upsert(response)
        # No body to learn from (should not happen): the server applied exactly our fields.
        return apply_op(base, op, owner=None)
    if op.kind == "delete":
        return _deleted(base or {"clientBookmarkId": op.bookmark_id}, now_iso())
    if op.kind in ("collection-delete", "highlight-delete"):
        # Deleting a collection or a highlight the server never sent us leaves nothing to show.
        return None if base is None else _deleted(base, now_iso())
    if op.kind == "collections":
        if base is None:
            return None
        return {**base, "collectionIds": list(op.payload["collectionIds"])}
    raise ValueError(f"unknown operation kind {op.kind!r}")
