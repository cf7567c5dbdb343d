"""The check-now route of link health (docs/api-guide.md, section 15).

It lives in enrichment, which holds the check queue: the bookmark is found in enrichment's projection of
the user's bookmarks (``bookmark_urls``), so an unknown, deleted or other user's bookmark is a 404 here.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import JSONResponse

from enrichment.api.deps import AppClock, CurrentUser, Sessions
from enrichment.api.schemas import CLIENT_BOOKMARK_ID_PATTERN, ERROR_RESPONSES, LinkCheckAccepted
from enrichment.links import service

router = APIRouter(prefix="/v1/bookmarks", tags=["link health"], responses=ERROR_RESPONSES)


@router.post("/{clientBookmarkId}/check-link", status_code=202, response_model=LinkCheckAccepted)
async def check_link(
    clientBookmarkId: Annotated[  # noqa: N803 -- the path parameter's name in the contract
        str, Path(pattern=CLIENT_BOOKMARK_ID_PATTERN, description="Client-generated bookmark id.")
    ],
    user: CurrentUser,
    sessions: Sessions,
    clock: AppClock,
) -> JSONResponse:
    """Check this bookmark's link soon (the result arrives through delta); at most 10 per user per minute."""
    await service.request_check(
        sessions=sessions, user_id=user.user_id, client_bookmark_id=clientBookmarkId, now=clock.now()
    )
    return JSONResponse({"accepted": True}, status_code=202)
