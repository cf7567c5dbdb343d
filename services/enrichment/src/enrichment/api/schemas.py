"""Request and response models of the enrichment API (field names exactly as the spec writes them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictStr

from common.handlers import error_responses


def _iso8601_only(value: Any) -> Any:
    # pydantic would also accept numbers as Unix times; the contract says ISO 8601 strings.
    if not isinstance(value, str | datetime):
        raise ValueError("must be an ISO 8601 timestamp string")
    return value


def _assume_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


Timestamp = Annotated[datetime, BeforeValidator(_iso8601_only), AfterValidator(_assume_utc)]
CLIENT_BOOKMARK_ID_PATTERN = r"^[a-zA-Z0-9_-]{1,128}$"


class EnqueueRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    clientBookmarkId: Annotated[StrictStr, Field(pattern=CLIENT_BOOKMARK_ID_PATTERN)]
    # Only the length here (a limit, 400 invalid-request); whether it is an http(s) URL is checked
    # after consent, as invalid-url (decisions.md §6.1).
    url: Annotated[StrictStr, Field(max_length=2048)]
    clientSavedAt: Timestamp


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
