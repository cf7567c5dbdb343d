"""HTTP routes of the bookmarks service (spec: Endpoints → bookmarks)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse

from bookmarks import service
from bookmarks.api.deps import AppSettings, ClientBookmarkId, CurrentUser, Sessions
from bookmarks.api.schemas import (
    ERROR_RESPONSES,
    BookmarkEnvelope,
    BookmarkUpsert,
    CollectionsReplace,
    DeltaEnvelope,
)
from bookmarks.metrics import DELTA_PAGE_RECORDS
from common.errors import InvalidUrl
from common.urls import InvalidUrlError, validate_http_url

router = APIRouter(prefix="/v1/bookmarks", tags=["bookmarks"], responses=ERROR_RESPONSES)


@router.get("/delta", response_model=DeltaEnvelope)
async def get_delta(
    user: CurrentUser,
    sessions: Sessions,
    settings: AppSettings,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> Response:
    """Delta sync: records strictly after ``cursor`` in (updatedAt, clientBookmarkId) order."""
    page = await service.read_delta(
        sessions=sessions, owner=user.user_id, cursor=cursor, limit=limit, cursor_secret=settings.cursor_secret
    )
    DELTA_PAGE_RECORDS.labels("bookmarks").observe(len(page.upserts) + len(page.tombstones))
    # Built directly: re-validating up to 1000 records through the response model is the hot path's cost.
    return JSONResponse(
        {
            "data": {
                "cursor": page.cursor,
                "nextCursor": page.next_cursor,
                "upserts": page.upserts,
                "tombstones": page.tombstones,
            }
        }
    )


@router.put("/{clientBookmarkId}", response_model=BookmarkEnvelope)
async def put_bookmark(
    clientBookmarkId: ClientBookmarkId,  # noqa: N803 - the spec's name
    body: BookmarkUpsert,
    user: CurrentUser,
    sessions: Sessions,
) -> Response:
    """Create or update (merge) a bookmark; idempotent."""
    try:
        validate_http_url(body.url)
    except InvalidUrlError as exc:
        raise InvalidUrl(str(exc)) from exc
    bookmark = await service.upsert_bookmark(
        sessions=sessions,
        owner=user.user_id,
        client_bookmark_id=clientBookmarkId,
        fields=body.model_dump(include=body.model_fields_set),
    )
    return JSONResponse({"data": bookmark})


@router.delete("/{clientBookmarkId}", status_code=204)
async def delete_bookmark(clientBookmarkId: ClientBookmarkId, user: CurrentUser, sessions: Sessions) -> Response:  # noqa: N803
    """Soft-delete (idempotent); the bookmark then appears as a tombstone in delta."""
    await service.delete_bookmark(sessions=sessions, owner=user.user_id, client_bookmark_id=clientBookmarkId)
    return Response(status_code=204)


@router.put("/{clientBookmarkId}/collections", status_code=204)
async def put_collections(
    clientBookmarkId: ClientBookmarkId,  # noqa: N803
    body: CollectionsReplace,
    user: CurrentUser,
    sessions: Sessions,
) -> Response:
    """Replace the bookmark's collection memberships."""
    await service.replace_collections(
        sessions=sessions, owner=user.user_id, client_bookmark_id=clientBookmarkId, collection_ids=body.collectionIds
    )
    return Response(status_code=204)
