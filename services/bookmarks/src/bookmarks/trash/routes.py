"""HTTP routes of the trash (docs/api-guide.md, section 14)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from bookmarks.api import wire
from bookmarks.api.deps import AppSettings, ClientBookmarkId, CurrentUser, Sessions
from bookmarks.api.schemas import ERROR_RESPONSES, Bookmark, BookmarkEnvelope
from bookmarks.trash import service
from common.validation import Timestamp

router = APIRouter(prefix="/v1/trash", tags=["trash"], responses=ERROR_RESPONSES)


class TrashItem(BaseModel):
    bookmark: Bookmark
    deletedAt: str
    purgeAt: str = Field(description="When the kept state is purged for good (deletedAt + TRASH_RETENTION_DAYS).")
    mergedInto: str | None = Field(description="The bookmark a duplicates merge kept instead of this one.")


class TrashPageData(BaseModel):
    items: list[TrashItem]
    nextCursor: str | None


class TrashPageEnvelope(BaseModel):
    data: TrashPageData


class RestoreSince(BaseModel):
    model_config = ConfigDict(extra="forbid")

    deletedSince: Timestamp


class RestoredCount(BaseModel):
    restored: int


class RestoredEnvelope(BaseModel):
    data: RestoredCount


def _item(item: service.TrashItem, *, is_pro: bool) -> dict[str, Any]:
    return {
        "bookmark": wire.bookmark(item.record, is_pro=is_pro),
        "deletedAt": wire.iso(item.record.deleted_at),
        "purgeAt": wire.iso(item.purge_at),
        "mergedInto": item.merged_into,
    }


@router.get("", response_model=TrashPageEnvelope)
async def list_trash(
    user: CurrentUser,
    sessions: Sessions,
    settings: AppSettings,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> Response:
    """The caller's deleted bookmarks that can still be restored, most recently deleted first."""
    found = await service.list_trash(
        sessions=sessions,
        owner=user.user_id,
        limit=limit,
        cursor=cursor,
        secret=settings.cursor_secret,
        retention=settings.trash_retention,
    )
    items = [_item(item, is_pro=found.is_pro) for item in found.items]
    return JSONResponse({"data": {"items": items, "nextCursor": found.next_cursor}})


@router.post("/restore", response_model=RestoredEnvelope)
async def restore_since(body: RestoreSince, user: CurrentUser, sessions: Sessions, settings: AppSettings) -> Response:
    """Restore everything deleted at or after ``deletedSince`` (at most 10,000 per call)."""
    restored = await service.restore_since(
        sessions=sessions, owner=user.user_id, since=body.deletedSince, retention=settings.trash_retention
    )
    return JSONResponse({"data": {"restored": restored}})


@router.post("/{clientBookmarkId}/restore", response_model=BookmarkEnvelope)
async def restore_one(
    clientBookmarkId: ClientBookmarkId,  # noqa: N803 - the spec's name
    user: CurrentUser,
    sessions: Sessions,
    settings: AppSettings,
) -> Response:
    """Bring one bookmark back as it was when deleted."""
    view = await service.restore_one(
        sessions=sessions, owner=user.user_id, client_bookmark_id=clientBookmarkId, retention=settings.trash_retention
    )
    return JSONResponse({"data": wire.bookmark(view.record, is_pro=view.is_pro)})


@router.delete("/{clientBookmarkId}", status_code=204)
async def purge_one(clientBookmarkId: ClientBookmarkId, user: CurrentUser, sessions: Sessions) -> Response:  # noqa: N803
    """Delete one trashed bookmark for good (idempotent)."""
    await service.purge_one(sessions=sessions, owner=user.user_id, client_bookmark_id=clientBookmarkId)
    return Response(status_code=204)


@router.delete("", status_code=204)
async def empty_trash(user: CurrentUser, sessions: Sessions) -> Response:
    """Delete everything in the trash for good."""
    await service.empty_trash(sessions=sessions, owner=user.user_id)
    return Response(status_code=204)
