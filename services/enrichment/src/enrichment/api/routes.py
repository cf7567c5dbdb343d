"""HTTP routes of the enrichment service (docs/api-guide.md, section 6)."""

from __future__ import annotations

import mimetypes
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse

from common.errors import InvalidRequest, PayloadTooLarge, describe_bytes
from enrichment import service
from enrichment.api.deps import AppClock, ClientBookmarkIdQuery, CurrentUser, Entitlements, Sessions
from enrichment.api.schemas import (
    ERROR_RESPONSES,
    CaptureRequest,
    EnqueueAccepted,
    EnqueueCacheHit,
    EnqueueRequest,
    QuotaEnvelope,
    StatusEnvelope,
)
from enrichment.domain.model import MAX_CAPTURED_HTML_BYTES, CapturedPage

router = APIRouter(prefix="/v1/enrichment", tags=["enrichment"], responses=ERROR_RESPONSES)

_SNAPSHOT_FILE_NAMES = {"html": "snapshot.html", "screenshot": "snapshot.png"}


def _snapshot_file_name(kind: str, content_type: str) -> str:
    if kind == "thumbnail":  # whichever raster type the site served; only known extensions
        return "thumbnail" + (mimetypes.guess_extension(content_type) or "")
    return _SNAPSHOT_FILE_NAMES[kind]


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


@router.post("/capture", status_code=202, response_model=EnqueueAccepted)
async def capture(
    body: CaptureRequest, user: CurrentUser, sessions: Sessions, entitlements: Entitlements, clock: AppClock
) -> Response:
    """Queue enrichment of a bookmark from the page as the user's browser rendered it (private to the user)."""
    page = CapturedPage(html=_utf8(body.html), title=body.title)
    rights = await service.resolve_entitlements(sessions=sessions, client=entitlements, user_id=user.user_id)
    outcome = await service.capture(
        sessions=sessions,
        user_id=user.user_id,
        client_bookmark_id=body.clientBookmarkId,
        url=body.url,
        page=page,
        entitlements=rights,
        clock=clock,
    )
    return JSONResponse({"accepted": True, "status": outcome.status}, status_code=202)


def _utf8(html: str) -> bytes:
    """The captured HTML as stored: UTF-8, at most MAX_CAPTURED_HTML_BYTES."""
    if len(html) > MAX_CAPTURED_HTML_BYTES:  # each character is at least one byte
        raise PayloadTooLarge(f"Field 'html' is larger than {describe_bytes(MAX_CAPTURED_HTML_BYTES)} of UTF-8.")
    try:
        encoded = html.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate such as "\ud800" is valid JSON but not text
        raise InvalidRequest("Field 'html' must be valid Unicode text (UTF-8).") from None
    if len(encoded) > MAX_CAPTURED_HTML_BYTES:
        raise PayloadTooLarge(f"Field 'html' is larger than {describe_bytes(MAX_CAPTURED_HTML_BYTES)} of UTF-8.")
    return encoded


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


@router.get("/quota", response_model=QuotaEnvelope)
async def quota(user: CurrentUser, sessions: Sessions, entitlements: Entitlements, clock: AppClock) -> Response:
    """The caller's enrichment quota: limits (null on Pro), this month's use, and when it resets."""
    rights = await service.resolve_entitlements(sessions=sessions, client=entitlements, user_id=user.user_id)
    use = await service.read_quota_use(sessions=sessions, user_id=user.user_id, is_pro=rights.is_pro, clock=clock)
    return JSONResponse(
        {
            "data": {
                "plan": "pro" if use.is_pro else "free",
                "monthlyLimit": use.monthly_limit,
                "usedThisMonth": use.used_this_month,
                "remainingThisMonth": use.remaining_this_month,
                "resetsAt": use.resets_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "perMinuteLimit": use.per_minute_limit,
            }
        },
        headers={"Cache-Control": "no-store"},
    )


@router.get("/snapshot", responses={200: {"content": {"text/html": {}, "image/png": {}, "image/*": {}}}})
async def snapshot(
    clientBookmarkId: ClientBookmarkIdQuery,  # noqa: N803 - the spec's name
    kind: Annotated[Literal["html", "screenshot", "thumbnail"], Query()],
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
            "Content-Disposition": f'attachment; filename="{_snapshot_file_name(kind, found.content_type)}"',
            "Cache-Control": "private, max-age=300",
        },
    )
