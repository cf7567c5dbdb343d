"""HTTP routes of highlights (docs/api-guide.md, section 16)."""

from __future__ import annotations

from typing import Annotated, Self

from fastapi import APIRouter, Path, Response
from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator, model_validator

from bookmarks.api import wire
from bookmarks.api.deps import CurrentUser, Sessions
from bookmarks.api.schemas import ERROR_RESPONSES, HighlightEnvelope
from bookmarks.highlights import service
from bookmarks.highlights.rules import MAX_CONTEXT, MAX_NOTE, MAX_QUOTE, Color, HighlightWrite
from common.validation import CLIENT_ID_PATTERN, Text

router = APIRouter(prefix="/v1/highlights", tags=["highlights"], responses=ERROR_RESPONSES)

HighlightId = Annotated[str, Path(pattern=CLIENT_ID_PATTERN, description="Client-generated highlight id.")]
# Offsets in the readable text, in Unicode code points; no page's text comes near the bound.
MAX_OFFSET = 10_000_000
Offset = Annotated[StrictInt, Field(ge=0, le=MAX_OFFSET)]


class HighlightUpsert(BaseModel):
    """PUT body: ``bookmarkId`` and ``quote`` always (they never change); an absent field keeps its value."""

    model_config = ConfigDict(extra="ignore")

    bookmarkId: Annotated[str, Field(pattern=CLIENT_ID_PATTERN)]
    quote: Annotated[Text, Field(max_length=MAX_QUOTE * 2)]
    prefix: Annotated[Text, Field(max_length=MAX_CONTEXT)] | None = None
    suffix: Annotated[Text, Field(max_length=MAX_CONTEXT)] | None = None
    start: Offset | None = None
    end: Offset | None = None
    color: Color | None = None
    note: Annotated[Text, Field(max_length=MAX_NOTE)] | None = None

    @field_validator("quote")
    @classmethod
    def _trimmed_quote(cls, value: str) -> str:
        quote = value.strip()
        if not 1 <= len(quote) <= MAX_QUOTE:
            raise ValueError(f"quote must have 1-{MAX_QUOTE} characters after trimming")
        return quote

    @model_validator(mode="after")
    def _offsets(self) -> Self:
        if (self.start is None) != (self.end is None):
            raise ValueError("start and end come together (or neither)")
        if self.start is not None and self.end is not None and not self.start < self.end:
            raise ValueError("start must be before end")
        return self

    def to_write(self) -> HighlightWrite:
        return HighlightWrite(
            bookmark_id=self.bookmarkId,
            quote=self.quote,
            prefix=self.prefix,
            suffix=self.suffix,
            start=self.start,
            end=self.end,
            color=self.color,
            note=self.note,
        )


@router.put("/{highlightId}", response_model=HighlightEnvelope)
async def put_highlight(
    highlightId: HighlightId,  # noqa: N803 - the spec's name
    body: HighlightUpsert,
    user: CurrentUser,
    sessions: Sessions,
) -> Response:
    """Create a highlight, or change its color or note (absent fields keep their value); idempotent."""
    record = await service.put_highlight(
        sessions=sessions, owner=user.user_id, highlight_id=highlightId, write=body.to_write()
    )
    return wire.json_response({"data": wire.highlight(record)})


@router.delete("/{highlightId}", status_code=204)
async def delete_highlight(highlightId: HighlightId, user: CurrentUser, sessions: Sessions) -> Response:  # noqa: N803
    """Delete (idempotent)."""
    await service.delete_highlight(sessions=sessions, owner=user.user_id, highlight_id=highlightId)
    return Response(status_code=204)
