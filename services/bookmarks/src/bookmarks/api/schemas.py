"""Request and response models of the bookmarks API (field names exactly as the spec writes them)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from common.handlers import error_responses
from common.validation import Text, Timestamp

CollectionId = Annotated[Text, Field(min_length=1, max_length=256)]
CollectionIds = Annotated[list[CollectionId], Field(max_length=1000)]


class BookmarkUpsert(BaseModel):
    """PUT body. Absent fields keep their stored value; explicit null clears a nullable field."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)

    url: Annotated[Text, Field(max_length=2048)]
    clientSavedAt: Timestamp | None = None
    title: Annotated[Text, Field(max_length=1000)] | None = None
    description: Annotated[Text, Field(max_length=10_000)] | None = None
    thumbnailUrl: Annotated[Text, Field(max_length=2048)] | None = None
    isFavorite: StrictBool | None = None
    notes: Annotated[Text, Field(max_length=10_000)] | None = None
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
