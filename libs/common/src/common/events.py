"""Versioned event contracts shared by every service (ARCHITECTURE.md).

Every event is JSON on a topic of the same name as its ``type``, keyed by ``userId`` so that all events
of one user land on one partition and keep their order. A consumer parses a message with
:func:`parse_event`; unknown fields are ignored so producers can add optional fields without a new
``version``. A breaking change gets a new ``version`` value and consumers branch on it.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

TOPIC_BOOKMARK_SAVED = "bookmark.saved"
TOPIC_BOOKMARK_DELETED = "bookmark.deleted"
TOPIC_ENRICHMENT_COMPLETED = "enrichment.completed"
TOPIC_ENRICHMENT_FAILED = "enrichment.failed"
TOPIC_USER_UPDATED = "user.updated"
TOPIC_USER_DELETED = "user.deleted"
TOPIC_USER_MERGED = "user.merged"
TOPIC_COLLECTION_CHANGED = "collection.changed"
TOPIC_LINK_CHECKED = "link.checked"
TOPIC_HIGHLIGHT_CHANGED = "highlight.changed"

TOPICS: tuple[str, ...] = (
    TOPIC_BOOKMARK_SAVED,
    TOPIC_BOOKMARK_DELETED,
    TOPIC_ENRICHMENT_COMPLETED,
    TOPIC_ENRICHMENT_FAILED,
    TOPIC_USER_UPDATED,
    TOPIC_USER_DELETED,
    TOPIC_USER_MERGED,
    TOPIC_COLLECTION_CHANGED,
    TOPIC_LINK_CHECKED,
    TOPIC_HIGHLIGHT_CHANGED,
)

# The topics whose events each service writes to its outbox (keyed by the relay's service name).
PUBLISHED_TOPICS: dict[str, tuple[str, ...]] = {
    "auth": (TOPIC_USER_UPDATED, TOPIC_USER_DELETED, TOPIC_USER_MERGED),
    "bookmarks": (TOPIC_BOOKMARK_SAVED, TOPIC_BOOKMARK_DELETED, TOPIC_COLLECTION_CHANGED, TOPIC_HIGHLIGHT_CHANGED),
    "enrichment": (TOPIC_ENRICHMENT_COMPLETED, TOPIC_ENRICHMENT_FAILED, TOPIC_LINK_CHECKED),
    "enrichment-worker": (TOPIC_ENRICHMENT_COMPLETED, TOPIC_ENRICHMENT_FAILED, TOPIC_LINK_CHECKED),
}


def _now() -> datetime:
    return datetime.now(UTC)


class Event(BaseModel):
    """Fields every event carries."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    eventId: uuid.UUID = Field(default_factory=uuid.uuid4)
    type: str
    version: int = 1
    occurredAt: datetime = Field(default_factory=_now)
    userId: uuid.UUID

    @property
    def topic(self) -> str:
        return self.type

    @property
    def key(self) -> str:
        return str(self.userId)


class BookmarkSaved(Event):
    """A bookmark was created, changed, revived, enriched or merged: anything a delta reader would see."""

    type: Literal["bookmark.saved"] = "bookmark.saved"
    clientBookmarkId: str
    url: str
    normalizedUrl: str
    domain: str
    updatedAt: datetime
    created: bool = False
    urlChanged: bool = False
    # A deleted bookmark came back. None: a producer from before this field, which did not say.
    revived: bool | None = None
    enrichmentStatus: str = "pending"
    # "import" for a bookmark written by a bulk import (docs/api-guide.md, section 13): enrichment applies cached
    # results but queues only low-priority work, and only for Pro users with useAi on. None otherwise.
    source: str | None = None

    def changes_url_or_liveness(self) -> bool:
        """Whether a projection of (bookmark → URL, deleted) could change: created, URL changed, revived
        (or an older event that does not say). A title, tag or enrichment change cannot."""
        return self.created or self.urlChanged or self.revived is not False


class BookmarkDeleted(Event):
    type: Literal["bookmark.deleted"] = "bookmark.deleted"
    clientBookmarkId: str
    normalizedUrl: str | None = None
    deletedAt: datetime


class CollectionChanged(Event):
    """A collection was created, changed, moved, deleted or merged (docs/api-guide.md, section 11): a delta reader
    would see it. Carries no name: consumers only need to know the user's stream moved."""

    type: Literal["collection.changed"] = "collection.changed"
    collectionId: str
    deleted: bool = False
    updatedAt: datetime


class HighlightChanged(Event):
    """A highlight was created, changed or deleted by its user (docs/api-guide.md, section 16): a delta
    reader would see it. Highlights that follow their bookmark (a delete, a restore, a merge, re-anchoring)
    travel with that bookmark's event. Carries no text: consumers only need to know the stream moved."""

    type: Literal["highlight.changed"] = "highlight.changed"
    highlightId: str
    deleted: bool = False
    updatedAt: datetime


# The readable text an enrichment result carries: what highlights are anchored in (docs/api-guide.md,
# section 16). Search indexes its first SEARCH_TEXT_MAX_BYTES.
PAGE_TEXT_MAX_BYTES = 256 * 1024
SEARCH_TEXT_MAX_BYTES = 32 * 1024


def page_text_excerpt(text: str | None, max_bytes: int = PAGE_TEXT_MAX_BYTES) -> str | None:
    """The start of ``text`` in at most ``max_bytes`` of UTF-8, never cutting a character (nor, when a
    space is near, a word); None for blank text."""
    if text is None or not text.strip():
        return None
    encoded = text.encode()
    if len(encoded) <= max_bytes:
        return text
    cut = encoded[:max_bytes].decode("utf-8", errors="ignore")
    space = cut.rfind(" ", max(0, len(cut) - 200))
    return cut[:space] if space > 0 else cut


class EnrichmentResult(BaseModel):
    """What enrichment produced for one normalized URL (the cacheable part)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    normalizedUrl: str
    domain: str
    title: str | None = None
    description: str | None = None
    thumbnailUrl: str | None = None
    summary: str | None = None
    saveWhy: str | None = None
    tags: list[str] = Field(default_factory=list)
    snapshotStatus: str = "ready"
    language: str | None = None
    # Who wrote summary, saveWhy and tags: "llm" or "offline" (the offline analyser, also the LLM's fallback).
    summarySource: str | None = None
    # The canonical URL the page names, normalized, when it is on the saved URL's registrable domain, else
    # None (common.canonical.same_site_canonical); bookmarks groups duplicates by it (docs/api-guide.md, section 14).
    canonicalUrl: str | None = None
    # The page's readable text for highlights and search (docs/api-guide.md sections 12 and 16), at most
    # PAGE_TEXT_MAX_BYTES of UTF-8 (see page_text_excerpt): the event stays below the broker's 1 MiB message limit.
    text: str | None = None


class EnrichmentCompleted(Event):
    """Enrichment finished (or a cached result was applied) for one user's bookmark."""

    type: Literal["enrichment.completed"] = "enrichment.completed"
    clientBookmarkId: str
    normalizedUrl: str
    result: EnrichmentResult
    enrichedAt: datetime = Field(default_factory=_now)
    cacheHit: bool = False


class EnrichmentFailed(Event):
    """An attempt failed: ``status`` is ``retrying`` (another attempt is scheduled) or ``failed`` (final)."""

    type: Literal["enrichment.failed"] = "enrichment.failed"
    clientBookmarkId: str
    normalizedUrl: str
    status: Literal["retrying", "failed"]
    errorCode: str


class LinkChecked(Event):
    """A link check settled the health of a normalized URL; one event per live bookmark of the user that
    has it (docs/api-guide.md, section 15). ``checkedAt`` orders the reports of one bookmark."""

    type: Literal["link.checked"] = "link.checked"
    clientBookmarkId: str
    normalizedUrl: str
    linkStatus: Literal["ok", "moved", "gone", "blocked", "unreachable"]
    checkedAt: datetime
    # Where a permanent redirect leads, with linkStatus "moved"; None otherwise.
    movedTo: str | None = None


class UserUpdated(Event):
    """Profile, plan or consent of a user changed (also emitted when a user is created)."""

    type: Literal["user.updated"] = "user.updated"
    isAnonymous: bool
    isPro: bool
    useAi: bool


class UserDeleted(Event):
    """The account and all its data must be purged everywhere."""

    type: Literal["user.deleted"] = "user.deleted"


class UserMerged(Event):
    """``sourceUserId`` (anonymous) was merged into ``userId`` and must then be purged everywhere.

    Keyed by the target so it is ordered with the target's other events. Consumers move what the
    source owned (later ``updatedAt`` wins per ``clientBookmarkId``), then delete the source. No
    separate ``user.deleted`` is sent for the source: on another partition it could overtake the merge.
    """

    type: Literal["user.merged"] = "user.merged"
    sourceUserId: uuid.UUID


AnyEvent = Annotated[
    BookmarkSaved
    | BookmarkDeleted
    | EnrichmentCompleted
    | EnrichmentFailed
    | UserUpdated
    | UserDeleted
    | UserMerged
    | CollectionChanged
    | HighlightChanged
    | LinkChecked,
    Field(discriminator="type"),
]

_any_event: TypeAdapter[AnyEvent] = TypeAdapter(AnyEvent)


def parse_event(raw: bytes | str) -> AnyEvent:
    """Parse a message value into its contract model (raises ``pydantic.ValidationError``)."""
    return _any_event.validate_json(raw)


def serialize_event(event: Event) -> bytes:
    return event.model_dump_json().encode()
