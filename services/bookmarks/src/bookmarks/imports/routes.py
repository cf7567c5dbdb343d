"""Import routes (docs/api-guide.md, section 13): upload → 202, the Import record, the per-item report."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any, Final

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from sqlalchemy import RowMapping

from bookmarks.api.deps import AppSettings, CurrentUser, Sessions
from bookmarks.api.schemas import ERROR_RESPONSES, ImportEnvelope
from bookmarks.api.wire import iso
from bookmarks.imports import service
from bookmarks.imports.formats.upload import FORMAT_CHOICES, read_upload
from common.db import SessionFactory
from common.errors import NotFound

IMPORT_ROUTE: Final = "POST /v1/imports"
_REPORT_PAGE: Final = 1000

router = APIRouter(prefix="/v1/imports", tags=["imports"], responses=ERROR_RESPONSES)

_UPLOAD_BODY: Final[dict[str, Any]] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {"type": "string", "format": "binary", "description": "The export, at most 50 MiB."},
                        "format": {"type": "string", "enum": list(FORMAT_CHOICES), "default": "auto"},
                    },
                }
            }
        },
    }
}


def import_record(row: RowMapping) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "status": row["status"],
        "format": row["format"] or row["requested_format"],
        "total": row["total"],
        "processed": row["processed"],
        "created": row["created"],
        "updated": row["updated"],
        "unchanged": row["unchanged"],
        "invalid": row["invalid"],
        "createdAt": iso(row["created_at"]),
        "finishedAt": iso(row["finished_at"]),
        "error": row["error"],
    }


@router.post("", status_code=202, response_model=ImportEnvelope, openapi_extra=_UPLOAD_BODY)
async def create_import(
    request: Request, user: CurrentUser, sessions: Sessions, settings: AppSettings
) -> dict[str, Any]:
    """Store the upload (streamed, never whole in memory) and queue its import; 202 once it is stored."""
    limit = settings.max_body_bytes_by_route.get(IMPORT_ROUTE, settings.max_body_bytes)
    upload = await read_upload(request.headers.get("content-type"), request.stream(), max_file_bytes=limit)
    with upload.file:
        row = await service.create_import(
            sessions, owner=user.user_id, fmt=upload.format, upload=upload.file, size=upload.size
        )
    wakeup = getattr(request.app.state, "import_wakeup", None)
    if wakeup is not None:
        wakeup.set()
    return {"data": import_record(row)}


async def _owned(sessions: SessionFactory, owner: uuid.UUID, import_id: str) -> RowMapping:
    try:
        key = uuid.UUID(import_id)
    except ValueError:
        raise NotFound("No such import.") from None
    row = await service.find_import(sessions, owner, key)
    if row is None:
        raise NotFound("No such import.")
    return row


@router.get("/{importId}", response_model=ImportEnvelope)
async def get_import(importId: str, user: CurrentUser, sessions: Sessions) -> dict[str, Any]:  # noqa: N803
    """The import's state and counters; another user's import is 404."""
    return {"data": import_record(await _owned(sessions, user.user_id, importId))}


async def _report_lines(sessions: SessionFactory, import_id: uuid.UUID) -> AsyncIterator[bytes]:
    async for rows in service.report_pages(sessions, import_id, _REPORT_PAGE):
        yield b"".join(_report_line(r) for r in rows)


def _report_line(row: RowMapping) -> bytes:
    line = {
        "line": row["line"],
        "url": row["url"],
        "outcome": row["outcome"],
        "reason": row["reason"],
        "clientBookmarkId": row["client_bookmark_id"],
    }
    return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


@router.get(
    "/{importId}/report",
    response_class=StreamingResponse,
    responses={
        200: {"description": "JSON Lines: one object per item in file order.", "content": {"application/jsonl": {}}}
    },
)
async def get_import_report(importId: str, user: CurrentUser, sessions: Sessions) -> StreamingResponse:  # noqa: N803
    """The per-item outcome, one JSON object per line in file order (items processed so far)."""
    row = await _owned(sessions, user.user_id, importId)
    return StreamingResponse(_report_lines(sessions, row["id"]), media_type="application/jsonl")
