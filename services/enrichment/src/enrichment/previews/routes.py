"""HTTP routes of link previews (docs/api-guide.md, section 6)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.responses import JSONResponse

from enrichment.api.deps import AppClock, AppSettings, CurrentUser, Sessions
from enrichment.api.schemas import ERROR_RESPONSES, PreviewEnvelope
from enrichment.previews import service
from enrichment.previews.fetch import Previewer
from enrichment.previews.images import IMAGE_CONTENT_TYPE

router = APIRouter(prefix="/v1/previews", tags=["previews"], responses=ERROR_RESPONSES)

# A picture's name is the hash of its bytes: it never changes, whoever asks.
_IMAGE_HEADERS = {
    "Cache-Control": "public, max-age=31536000, immutable",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
}


@router.get("", response_model=PreviewEnvelope)
async def preview(
    url: Annotated[str, Query(max_length=4096, description="The page to preview (http or https).")],
    request: Request,
    user: CurrentUser,
    sessions: Sessions,
    settings: AppSettings,
    clock: AppClock,
) -> Response:
    """Title, description, site name, language, picture and icon of a page; no AI, no quota."""
    previewer: Previewer = request.app.state.previewer
    found = await service.get_preview(
        sessions=sessions,
        previewer=previewer,
        policy=settings.preview_policy,
        clock=clock,
        user_id=user.user_id,
        url=url,
    )
    return JSONResponse({"data": found.wire()}, headers={"Cache-Control": "private, max-age=300"})


@router.get(
    "/images/{name}",
    responses={200: {"content": {IMAGE_CONTENT_TYPE: {}}, "description": "The re-encoded picture."}},
    openapi_extra={"security": []},
)
async def image(
    name: Annotated[str, Path(max_length=80, description="`<sha256 hex>.webp`, as a preview's imageUrl names it.")],
    sessions: Sessions,
) -> Response:
    """A preview's picture or icon, or an enrichment thumbnail; public, as its name is its content's hash."""
    data = await service.read_image(sessions=sessions, name=name)
    return Response(data, media_type=IMAGE_CONTENT_TYPE, headers=_IMAGE_HEADERS)
