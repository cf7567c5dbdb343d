"""HTTP routes of the enrichment service (docs/api-guide.md, section 6)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse

from enrichment import service
from enrichment.api.deps import AppClock, ClientBookmarkIdQuery, CurrentUser, Entitlements, Sessions
from enrichment.api.schemas import (
    ERROR_RESPONSES,
    EnqueueAccepted,
    EnqueueCacheHit,
    EnqueueRequest,
    StatusEnvelope,
)

router = APIRouter(prefix="/v1/enrichment", tags=["enrichment"], responses=ERROR_RESPONSES)

_SNAPSHOT_FILE_NAMES = {"html": "snapshot.html", "screenshot": "snapshot.png"}


@router.post(
    "/enqueue",
    status_code=202,
    response_model=EnqueueAccepted,
    responses={200: {"model": EnqueueCacheHit, "description": "A cached result was applied at once."}},
)
async def enqueue(
    body: EnqueueRequest, user: CurrentUser, sessions: Sessions, entitlements: Entitlements, clock: AppClock
) -> Response:
    """Queue enrichment of a bookmark's URL (or apply a cached result at once)."""
    rights = await service.resolve_entitlements(sessions=sessions, client=entitlements, user_id=user.user_id)
    outcome = await service.enqueue(
        sessions=sessions,
        user_id=user.user_id,
        client_bookmark_id=body.clientBookmarkId,
        url=body.url,
        client_saved_at=body.clientSavedAt,
        entitlements=rights,
        clock=clock,
    )
    if outcome.cache_hit:
        return JSONResponse({"cacheHit": True, "status": outcome.status}, status_code=200)
    return JSONResponse({"accepted": True, "status": outcome.status}, status_code=202)


@router.get("/status", response_model=StatusEnvelope)
async def status(
    clientBookmarkId: ClientBookmarkIdQuery,  # noqa: N803 - the spec's name
    user: CurrentUser,
    sessions: Sessions,
    entitlements: Entitlements,
) -> Response:
    """The bookmark's job status and result; ``saveWhy`` only for Pro users."""
    rights = await service.resolve_entitlements(sessions=sessions, client=entitlements, user_id=user.user_id)
    view = await service.enrichment_status(
        sessions=sessions, user_id=user.user_id, client_bookmark_id=clientBookmarkId, is_pro=rights.is_pro
    )
    return JSONResponse(
        {
            "data": {
                "clientBookmarkId": view.client_bookmark_id,
                "status": view.status,
                "result": view.result,
                "errorCode": view.error_code,
            }
        }
    )


@router.get("/snapshot", responses={200: {"content": {"text/html": {}, "image/png": {}}}})
async def snapshot(
    clientBookmarkId: ClientBookmarkIdQuery,  # noqa: N803 - the spec's name
    kind: Annotated[Literal["html", "screenshot"], Query()],
    user: CurrentUser,
    sessions: Sessions,
) -> Response:
    """Download the stored capture of the bookmark's page (the bookmark's owner only)."""
    found = await service.read_snapshot(
        sessions=sessions, user_id=user.user_id, client_bookmark_id=clientBookmarkId, kind=kind
    )
    return Response(
        found.data,
        media_type=found.content_type,
        headers={
            # Captured pages are someone else's HTML: never let it run with our origin's authority.
            "Content-Security-Policy": "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'",
            "X-Content-Type-Options": "nosniff",
            "Content-Disposition": f'attachment; filename="{_SNAPSHOT_FILE_NAMES[kind]}"',
            "Cache-Control": "private, max-age=300",
        },
    )
