"""The delta route (docs/api-guide.md, section 4)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from bookmarks.api.deps import AppSettings, CurrentUser, Sessions
from bookmarks.api.schemas import ERROR_RESPONSES, DeltaEnvelope
from bookmarks.metrics import DELTA_PAGE_RECORDS
from bookmarks.sync import service
from bookmarks.sync.documents import DELTA_DOCUMENTS, delta_body

# On the /v1/bookmarks prefix; main.py includes it first of that prefix's routers, so the document lists
# /delta where it always stood.
router = APIRouter(prefix="/v1/bookmarks", tags=["bookmarks"], responses=ERROR_RESPONSES)


@router.get("/delta", response_model=DeltaEnvelope)
async def get_delta(
    user: CurrentUser,
    sessions: Sessions,
    settings: AppSettings,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> Response:
    """Delta sync: bookmarks and collections strictly after ``cursor`` in stream order; ``limit``
    counts every record of the page."""
    page = await service.read_delta(
        sessions=sessions,
        owner=user.user_id,
        cursor=cursor,
        limit=limit,
        cursor_secret=settings.cursor_secret,
        documents=DELTA_DOCUMENTS,
    )
    DELTA_PAGE_RECORDS.labels("bookmarks").observe(page.records.count)
    # Every record arrives as its wire JSON, rendered by PostgreSQL from the declared wire models
    # (api/wire.py; an integration test holds it equal to the Python rendering field by field).
    return Response(delta_body(page.cursor, page.next_cursor, page.records), media_type="application/json")
