"""Request and response models of the enrichment API (field names exactly as the spec writes them)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from common.handlers import error_responses
from common.validation import StrictText, Timestamp

CLIENT_BOOKMARK_ID_PATTERN = r"^[a-zA-Z0-9_-]{1,128}$"


class EnqueueRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    clientBookmarkId: Annotated[StrictText, Field(pattern=CLIENT_BOOKMARK_ID_PATTERN)]
    # Only the length here (a limit, 400 invalid-request); whether it is an http(s) URL is checked
    # after consent, as invalid-url (docs/api-guide.md §6).
    url: Annotated[StrictText, Field(max_length=2048)]
    clientSavedAt: Timestamp


class CaptureRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    clientBookmarkId: Annotated[StrictText, Field(pattern=CLIENT_BOOKMARK_ID_PATTERN)]
    url: Annotated[StrictText, Field(max_length=2048)]
    # Its size (at most 10 MiB as UTF-8) is checked by the route, which answers 413 beyond it.
    html: Annotated[StrictStr, Field(description="The page as the browser rendered it (document HTML).")]
    title: Annotated[StrictText | None, Field(max_length=1000)] = None


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


ERROR_RESPONSES = error_responses(400, 401, 403, 404, 413, 429, 500, 503)
