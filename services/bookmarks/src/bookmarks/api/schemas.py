"""Request and response models of the bookmarks API (field names exactly as the spec writes them)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, field_validator

from bookmarks.domain.tags import normalize_user_tags
from common.handlers import error_responses
from common.validation import CLIENT_ID_PATTERN, Text, Timestamp

CollectionId = Annotated[Text, Field(min_length=1, max_length=256)]
CollectionIds = Annotated[list[CollectionId], Field(max_length=1000)]
# Validated item by item by the domain rule (400 naming userTags; never silently dropped).
UserTags = Annotated[
    list[str],
    Field(description="The user's own tags: trimmed, 1-64 chars, no control characters, at most 50."),
    AfterValidator(lambda tags: list(normalize_user_tags(tags))),
]
ID_PATTERN = CLIENT_ID_PATTERN


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
    userTags: UserTags = Field(default_factory=list)
    isArchived: StrictBool = False


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
    userTags: list[str]
    isArchived: bool
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


class CollectionUpsert(BaseModel):
    """PUT body: ``name`` required on create; an absent ``parentId`` keeps the stored parent."""

    model_config = ConfigDict(extra="ignore")

    name: Annotated[Text, Field(max_length=1000)] | None = None
    parentId: Annotated[str, Field(pattern=ID_PATTERN)] | None = None

    @field_validator("name")
    @classmethod
    def _trimmed_name(cls, value: str | None) -> str | None:
        if value is None:
            return None
        name = value.strip()
        if not 1 <= len(name) <= 200:
            raise ValueError("name must have 1-200 characters after trimming")
        return name


class Collection(BaseModel):
    id: str
    name: str
    parentId: str | None
    createdAt: str
    updatedAt: str


class CollectionEnvelope(BaseModel):
    data: Collection


class CollectionTombstone(BaseModel):
    id: str
    deletedAt: str


class DeltaData(BaseModel):
    cursor: str | None
    nextCursor: str | None
    upserts: list[Bookmark]
    tombstones: list[Tombstone]
    collections: list[Collection]
    collectionTombstones: list[CollectionTombstone]


class DeltaEnvelope(BaseModel):
    data: DeltaData


class ImportRecord(BaseModel):
    """An import (docs/api-guide.md, section 13); ``format`` is the detected one once the job has read the file."""

    id: str
    status: str = Field(description="queued | running | completed | failed")
    format: str
    total: int | None = Field(description="Items in the file; null until the job has counted them.")
    processed: int
    created: int
    updated: int
    unchanged: int
    invalid: int
    createdAt: str
    finishedAt: str | None
    error: str | None = Field(description="Why the whole import failed (an unreadable or unrecognised file).")


class ImportEnvelope(BaseModel):
    data: ImportRecord


ERROR_RESPONSES = error_responses(400, 401, 404, 413, 422, 429, 500, 503)


class SearchResult(BaseModel):
    bookmark: Bookmark
    snippet: str | None


class SearchData(BaseModel):
    results: list[SearchResult]
    nextCursor: str | None


class SearchEnvelope(BaseModel):
    data: SearchData
