"""HTTP routes of duplicates (docs/api-guide.md, section 14)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from bookmarks.api import wire
from bookmarks.api.deps import AppSettings, CurrentUser, Sessions
from bookmarks.api.schemas import ERROR_RESPONSES, Bookmark, BookmarkEnvelope
from bookmarks.duplicates import service
from common.validation import CLIENT_ID_PATTERN

router = APIRouter(prefix="/v1/duplicates", tags=["duplicates"], responses=ERROR_RESPONSES)

BookmarkId = Annotated[str, Field(pattern=CLIENT_ID_PATTERN)]


class DuplicateGroup(BaseModel):
    key: str = Field(
        description="What the group's bookmarks share: the canonical URL their pages name, else their normalized URL."
    )
    bookmarks: list[Bookmark]


class DuplicatesData(BaseModel):
    groups: list[DuplicateGroup]
    nextCursor: str | None


class DuplicatesEnvelope(BaseModel):
    data: DuplicatesData


class MergeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keep: BookmarkId
    merge: list[BookmarkId] = Field(min_length=1, max_length=100)


@router.get("", response_model=DuplicatesEnvelope)
async def list_duplicates(
    user: CurrentUser,
    sessions: Sessions,
    settings: AppSettings,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=2600)] = None,
) -> Response:
    """Groups of the caller's live bookmarks of one page, each oldest save first; newest group first."""
    found = await service.list_duplicates(
        sessions=sessions, owner=user.user_id, limit=limit, cursor=cursor, secret=settings.cursor_secret
    )
    groups = [
        {"key": g.key, "bookmarks": [wire.bookmark(r, is_pro=found.is_pro) for r in g.bookmarks]} for g in found.groups
    ]
    return JSONResponse({"data": {"groups": groups, "nextCursor": found.next_cursor}})


@router.post("/merge", response_model=BookmarkEnvelope)
async def merge_duplicates(body: MergeRequest, user: CurrentUser, sessions: Sessions) -> Response:
    """Merge duplicates into the one kept; the merged ones go to the trash (restore them to undo)."""
    view = await service.merge_duplicates(sessions=sessions, owner=user.user_id, keep=body.keep, merge=body.merge)
    return JSONResponse({"data": wire.bookmark(view.record, is_pro=view.is_pro)})
