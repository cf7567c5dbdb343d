"""Request and response models of the enrichment API (field names exactly as the spec writes them)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from common.handlers import error_responses
from common.validation import CLIENT_ID_PATTERN, StrictText, Timestamp

CLIENT_BOOKMARK_ID_PATTERN = CLIENT_ID_PATTERN


class EnqueueRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    clientBookmarkId: Annotated[StrictText, Field(pattern=CLIENT_BOOKMARK_ID_PATTERN)]
    # Only the length here (a limit, 400 invalid-request); whether it is an http(s) URL is checked
    # after consent, as invalid-url (docs/api-guide.md, section 6).
    url: Annotated[StrictText, Field(max_length=2048)]
    clientSavedAt: Timestamp


class CaptureRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    clientBookmarkId: Annotated[StrictText, Field(pattern=CLIENT_BOOKMARK_ID_PATTERN)]
    url: Annotated[StrictText, Field(max_length=2048)]
    # Its size (at most 10 MiB as UTF-8) is checked by the route, which answers 413 beyond it.
    html: Annotated[StrictStr, Field(description="The page as the browser rendered it (document HTML).")]
    title: Annotated[StrictText | None, Field(max_length=1000)] = None


class LinkCheckAccepted(BaseModel):
    accepted: bool = True


class EnqueueAccepted(BaseModel):
    accepted: bool = True
    status: str


class EnqueueCacheHit(BaseModel):
    cacheHit: bool = True
    status: str = "completed"


class EnrichmentResultView(BaseModel):
    normalizedUrl: str
    domain: str
    title: str | None
    description: str | None
    thumbnailUrl: str | None
    summary: str | None
    saveWhy: str | None
    tags: list[str]
    snapshotStatus: str


class StatusData(BaseModel):
    clientBookmarkId: str
    status: str
    result: EnrichmentResultView | None
    errorCode: str | None


class StatusEnvelope(BaseModel):
    data: StatusData


class QuotaData(BaseModel):
    plan: Literal["free", "pro"]
    monthlyLimit: int | None = Field(description="New enrichment jobs a calendar month (UTC); null on Pro.")
    usedThisMonth: int = Field(
        description="Jobs this month's free quota has counted (cache hits and shared jobs are free)."
    )
    remainingThisMonth: int | None = Field(description="monthlyLimit - usedThisMonth, never below 0; null on Pro.")
    resetsAt: datetime = Field(description="Start of the next calendar month (UTC), when the count starts again.")
    perMinuteLimit: int | None = Field(description="New enrichment jobs in any rolling minute; null on Pro.")


class QuotaEnvelope(BaseModel):
    data: QuotaData


class PreviewData(BaseModel):
    url: str = Field(description="The URL as asked for.")
    normalizedUrl: str
    title: str | None
    description: str | None
    siteName: str | None
    language: str | None = Field(description="ISO 639-1 code, declared by the page or detected from its title.")
    imageUrl: str | None = Field(description="The page's picture, re-encoded, as a path on this origin.")
    faviconUrl: str | None = Field(description="The page's icon, re-encoded, as a path on this origin.")
    canonicalUrl: str | None


class PreviewEnvelope(BaseModel):
    data: PreviewData


ERROR_RESPONSES = error_responses(400, 401, 403, 404, 413, 429, 500, 503)
