"""``GET /v1/exports``: the user's whole library as a file (docs/api-guide.md, section 13)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from bookmarks.api.deps import CurrentUser, Sessions
from bookmarks.api.schemas import ERROR_RESPONSES
from bookmarks.exports.formats import FORMATS
from bookmarks.exports.stream import open_export
from common.errors import InvalidRequest

router = APIRouter(prefix="/v1/exports", tags=["exports"], responses=ERROR_RESPONSES)

_FILE = {
    "description": "The export file, streamed.",
    "content": {
        "text/html": {"schema": {"type": "string"}},
        "application/json": {"schema": {"type": "object"}},
        "text/csv": {"schema": {"type": "string"}},
        "text/markdown": {"schema": {"type": "string"}},
        "application/ld+json": {"schema": {"type": "object"}},
    },
}


@router.get("", response_class=StreamingResponse, responses={200: _FILE})
async def get_export(
    user: CurrentUser,
    sessions: Sessions,
    fmt: Annotated[
        str | None,
        Query(alias="format", max_length=32, description="`netscape`, `json`, `csv`, `markdown` or `annotations`."),
    ] = None,
) -> StreamingResponse:
    """Every live bookmark and collection, from one consistent snapshot, streamed as it is read."""
    if fmt not in FORMATS:
        raise InvalidRequest("format must be one of: netscape, json, csv, markdown, annotations.")
    export = await open_export(sessions, user.user_id, fmt)
    return StreamingResponse(
        export.body(),
        media_type=export.writer.media_type,
        headers={
            "Content-Disposition": f'attachment; filename="{export.filename}"',
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
        },
    )
