"""Public data types: server records (pydantic, snake_case attributes over the spec's camelCase names)
and the plain results of client operations.

Server models ignore unknown fields so a newer server never breaks an older client.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from bookmark_client import fields as f

__all__ = [
    "Bookmark",
    "Collection",
    "EnqueueResult",
    "EnrichmentJob",
    "EnrichmentResult",
    "FlushResult",
    "OpKind",
    "PageProgress",
    "PairingCode",
    "QueuedOp",
    "RejectedOp",
    "Session",
    "SyncResult",
    "User",
    "UserSettings",
]


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)

    def to_wire(self) -> dict[str, Any]:
        """The record with the spec's field names, JSON-ready."""
        return self.model_dump(mode="json", by_alias=True)


class User(_Wire):
    id: str
    is_anonymous: bool = False
    display_name: str | None = None
    email: str | None = None
    photo_url: str | None = None
    is_pro: bool = False


class Session(_Wire):
    access_token: str
    refresh_token: str
    user: User


class Bookmark(_Wire):
    """The local view of a bookmark: the server's copy with this device's queued edits applied on top.

    ``deleted``/``deleted_at`` mirror a tombstone (or a queued delete); ``pending`` is true while
    edits of this bookmark wait in the offline queue. Defaults cover bookmarks created offline, for
    which the server has not set its fields yet.

    ``Writable`` marks the fields a client writes (with their validation): this class is the one
    declaration of a bookmark's fields in the client; ``merge`` derives its lists from it.
    """

    client_bookmark_id: str
    owner_uid: str | None = None
    url: Annotated[str, f.Writable(f.url)] = ""
    normalized_url: str | None = None
    domain: str | None = None
    title: Annotated[str | None, f.Writable(f.nullable_text(1000))] = None
    description: Annotated[str | None, f.Writable(f.nullable_text(10_000))] = None
    thumbnail_url: Annotated[str | None, f.Writable(f.nullable_text(2048))] = None
    summary: str | None = None
    save_why: str | None = None
    tags: list[str] = []
    enrichment_status: str = "pending"
    snapshot_status: str = "pending"
    last_error_code: str | None = None
    is_favorite: Annotated[bool, f.Writable(f.boolean)] = False
    is_archived: Annotated[bool, f.Writable(f.boolean)] = False
    user_tags: Annotated[list[str], f.Writable(f.user_tags)] = []
    collection_ids: Annotated[list[str], f.Writable(f.collection_ids)] = []
    notes: Annotated[str | None, f.Writable(f.nullable_text(10_000))] = None
    client_saved_at: Annotated[str | None, f.Writable(f.timestamp)] = None
    last_opened_at: Annotated[str | None, f.Writable(f.timestamp)] = None
    created_at: str | None = None
    updated_at: str | None = None
    enriched_at: str | None = None
    deleted: bool = False
    deleted_at: str | None = None
    pending: bool = False


class Collection(_Wire):
    """The local view of a collection (docs/api-guide.md §11), like :class:`Bookmark`: the server's copy with
    this device's queued writes on top; ``deleted``/``deleted_at`` mirror a tombstone or a queued delete."""

    id: str
    name: Annotated[str, f.Writable(f.collection_name)] = ""
    parent_id: Annotated[str | None, f.Writable(f.parent_id)] = None
    created_at: str | None = None
    updated_at: str | None = None
    deleted: bool = False
    deleted_at: str | None = None
    pending: bool = False


class UserSettings(_Wire):
    use_ai: bool


class EnrichmentResult(_Wire):
    normalized_url: str | None = None
    domain: str | None = None
    title: str | None = None
    description: str | None = None
    thumbnail_url: str | None = None
    summary: str | None = None
    save_why: str | None = None
    tags: list[str] = []
    snapshot_status: str | None = None


class EnrichmentJob(_Wire):
    """``GET /v1/enrichment/status`` data."""

    client_bookmark_id: str
    status: str
    result: EnrichmentResult | None = None
    error_code: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "failed")


class ImportRecord(_Wire):
    """``POST /v1/imports`` / ``GET /v1/imports/{id}`` data (docs/api-guide.md §13)."""

    id: str
    status: str
    format: str
    total: int | None = None
    processed: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    invalid: int = 0
    error: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "failed")


class SearchResult(_Wire):
    """One hit of ``GET /v1/bookmarks/search``: the bookmark as the server has it, and a snippet (safe
    HTML where only ``<mark>``…``</mark>`` is markup; None for filter-only queries)."""

    bookmark: Bookmark
    snippet: str | None = None


class SearchPage(_Wire):
    results: list[SearchResult]
    next_cursor: str | None = None


class PairingCode(_Wire):
    """``POST /v1/auth/pairing`` data: ``code`` as shown (``XXXX-XXXX``), single use until ``expires_at``."""

    code: str
    expires_at: str


class EnqueueResult(_Wire):
    """``POST /v1/enrichment/enqueue``: ``cache_hit`` means the result was applied at once (200)."""

    status: str
    cache_hit: bool = False
    accepted: bool = False


# ``collection-put``/``collection-delete`` write a collection; the others a bookmark.
OpKind = Literal["put", "delete", "collections", "collection-put", "collection-delete"]
COLLECTION_KINDS: frozenset[OpKind] = frozenset({"collection-put", "collection-delete"})


@dataclass(frozen=True)
class QueuedOp:
    """One write waiting in the offline queue; ``seq`` is the replay order.

    ``bookmark_id`` is the id of the record written: a collection's id for the ``collection-*`` kinds.
    """

    seq: int
    kind: OpKind
    bookmark_id: str
    payload: dict[str, Any]
    created_at: str
    attempts: int = 0
    last_error: str | None = None


@dataclass(frozen=True)
class RejectedOp:
    """A queued write the server refused with a 4xx; it was dropped from the queue and kept here.

    ``bookmark_id`` is the id of the record written: a collection's id for the ``collection-*`` kinds.
    """

    seq: int
    kind: OpKind
    bookmark_id: str
    payload: dict[str, Any]
    status: int
    code: str
    message: str
    rejected_at: str


@dataclass(frozen=True)
class PageProgress:
    page: int
    upserts: int
    tombstones: int
    changed: int
    collections: int = 0
    collection_tombstones: int = 0


@dataclass
class SyncResult:
    pages: int = 0
    upserts: int = 0
    tombstones: int = 0
    changed_ids: list[str] = field(default_factory=list)
    collections: int = 0
    collection_tombstones: int = 0
    changed_collection_ids: list[str] = field(default_factory=list)
    elapsed: float = 0.0
    full_resync: bool = False


@dataclass
class FlushResult:
    sent: int = 0
    rejected: list[RejectedOp] = field(default_factory=list)
    remaining: int = 0
    sync: SyncResult | None = None
