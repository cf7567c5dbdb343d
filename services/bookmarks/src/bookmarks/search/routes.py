"""The search route (docs/api-guide.md, section 12)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from bookmarks.api import wire
from bookmarks.api.deps import AppSettings, CurrentUser, Sessions
from bookmarks.api.schemas import ERROR_RESPONSES, SearchEnvelope
from bookmarks.search import service

# On the /v1/bookmarks prefix; main.py includes it after the delta router and before the bookmarks' own,
# so the document lists /search between /delta and /lookup.
router = APIRouter(prefix="/v1/bookmarks", tags=["bookmarks"], responses=ERROR_RESPONSES)


@router.get("/search", response_model=SearchEnvelope)
async def search_bookmarks(
    user: CurrentUser,
    sessions: Sessions,
    settings: AppSettings,
    q: Annotated[str | None, Query(description="The query (docs/api-guide.md, section 12).")] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> Response:
    """Full-text search of the caller's live bookmarks: ranked results with ``<mark>`` snippets."""
    page = await service.search(
        sessions=sessions,
        owner=user.user_id,
        q=q,
        limit=limit,
        cursor=cursor,
        cursor_secret=settings.cursor_secret,
    )
    results = [{"bookmark": wire.bookmark(r.record, is_pro=page.is_pro), "snippet": r.snippet} for r in page.results]
    return wire.json_response({"data": {"results": results, "nextCursor": page.next_cursor}})
