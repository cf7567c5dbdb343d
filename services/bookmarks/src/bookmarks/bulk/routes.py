"""HTTP routes of bulk changes (docs/api-guide.md, section 14)."""

from __future__ import annotations

from typing import Annotated, Self

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator

from bookmarks.api.deps import CurrentUser, Sessions
from bookmarks.api.schemas import ERROR_RESPONSES
from bookmarks.bulk import service
from bookmarks.bulk.rules import Action, BulkArgs
from bookmarks.domain.model import CollectionId
from common.errors import InvalidRequest
from common.validation import CLIENT_ID_PATTERN, Text

router = APIRouter(prefix="/v1/bookmarks/bulk", tags=["bookmarks"], responses=ERROR_RESPONSES)

BookmarkId = Annotated[str, Field(pattern=CLIENT_ID_PATTERN)]


class BulkRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Action
    ids: list[BookmarkId] | None = Field(None, min_length=1, max_length=service.MAX_IDS)
    query: Annotated[Text, Field(max_length=1000)] | None = Field(
        None, description="A search query (docs/api-guide.md, section 12): every live match, at most 10,000."
    )
    tags: list[Text] | None = Field(None, min_length=1, max_length=50, description="For addTags and removeTags.")
    collectionId: CollectionId | None = Field(None, description="For addToCollection and removeFromCollection.")

    @model_validator(mode="after")
    def _one_selection(self) -> Self:
        if (self.ids is None) == (self.query is None):
            raise ValueError("give exactly one of 'ids' and 'query'")
        return self

    def args(self) -> BulkArgs:
        return BulkArgs(action=self.action, tags=tuple(self.tags or ()), collection_id=self.collectionId)


class BulkResult(BaseModel):
    affected: int
    undoToken: str


class BulkEnvelope(BaseModel):
    data: BulkResult


class UndoRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    undoToken: Annotated[Text, Field(min_length=1, max_length=200)]


class UndoResult(BaseModel):
    restored: int
    skipped: int


class UndoEnvelope(BaseModel):
    data: UndoResult


@router.post("", response_model=BulkEnvelope)
async def bulk_change(body: BulkRequest, user: CurrentUser, sessions: Sessions) -> Response:
    """One change to many bookmarks, by ids or by a search query; its token undoes it for an hour."""
    try:
        args = body.args()
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None
    done = await service.bulk_change(sessions=sessions, owner=user.user_id, args=args, ids=body.ids, query=body.query)
    return JSONResponse({"data": {"affected": done.affected, "undoToken": done.undo_token}})


@router.post("/undo", response_model=UndoEnvelope)
async def undo_bulk(body: UndoRequest, user: CurrentUser, sessions: Sessions) -> Response:
    """Put back what a bulk change set, where no later write changed it."""
    done = await service.undo_bulk(sessions=sessions, owner=user.user_id, undo_token=body.undoToken)
    return JSONResponse({"data": {"restored": done.restored, "skipped": done.skipped}})
