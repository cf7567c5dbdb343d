"""Request and response models of the bookmarks API (field names exactly as the spec writes them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool

from common.handlers import error_responses


def _iso8601_only(value: Any) -> Any:
    # pydantic would also accept numbers as Unix times; the contract says ISO 8601 strings.
    if value is not None and not isinstance(value, str | datetime):
        raise ValueError("must be an ISO 8601 timestamp string")
    return value


def _assume_utc(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


Timestamp = Annotated[datetime, BeforeValidator(_iso8601_only), AfterValidator(_assume_utc)]
CollectionId = Annotated[str, Field(min_length=1, max_length=256)]
CollectionIds = Annotated[list[CollectionId], Field(max_length=1000)]


class BookmarkUpsert(BaseModel):
    """PUT body. Absent fields keep their stored value; explicit null clears a nullable field."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)

    url: Annotated[str, Field(max_length=2048)]
    clientSavedAt: Timestamp | None = None
    title: Annotated[str, Field(max_length=1000)] | None = None
    description: Annotated[str, Field(max_length=10_000)] | None = None
    thumbnailUrl: Annotated[str, Field(max_length=2048)] | None = None
    isFavorite: StrictBool | None = None
    notes: Annotated[str, Field(max_length=10_000)] | None = None
    lastOpenedAt: Timestamp | None = None
    collectionIds: CollectionIds | None = None


class CollectionsReplace(BaseModel):
    model_config = ConfigDict(extra="ignore")

    collectionIds: CollectionIds


class Bookmark(BaseModel):
    ownerUid: str
    clientBookmarkId: str
    url: str
    normalizedUrl: str
    domain: str
    title: str | None
    description: str | None
    thumbnailUrl: str | None
    summary: str | None
    saveWhy: str | None
    tags: list[str]
    enrichmentStatus: str
    snapshotStatus: str
    lastErrorCode: str | None
    isFavorite: bool
    collectionIds: list[str]
    notes: str | None
    clientSavedAt: str | None
    lastOpenedAt: str | None
    createdAt: str
    updatedAt: str
    enrichedAt: str | None


class BookmarkEnvelope(BaseModel):
    data: Bookmark


class Tombstone(BaseModel):
    clientBookmarkId: str
    deletedAt: str


class DeltaData(BaseModel):
    cursor: str | None
    nextCursor: str | None
    upserts: list[Bookmark]
    tombstones: list[Tombstone]


class DeltaEnvelope(BaseModel):
    data: DeltaData


ERROR_RESPONSES = error_responses(400, 401, 404, 413, 422, 429, 500, 503)
