"""Maps every failure to ``{"code", "message"}`` (docs/api-guide.md, section 1), installed once per app."""

from __future__ import annotations

import logging
from typing import Any

import asyncpg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException

from common.context import request_id_var
from common.errors import AppError, Unavailable, error_for_status
from common.outages import is_outage

log = logging.getLogger("common.errors")


class ErrorBody(BaseModel):
    """Every non-2xx body (docs/api-guide.md, section 1), as documented in the OpenAPI schemas."""

    code: str
    message: str


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` declaring the error body for the given statuses of a router."""
    return {status: {"model": ErrorBody} for status in statuses}


def error_response(err: AppError) -> JSONResponse:
    return JSONResponse(err.body(), status_code=err.status, headers=err.headers)


def _field_name(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    return ".".join(parts) or "body"


def describe_validation_errors(errors: list[dict[str, Any]]) -> str:
    """One human sentence naming the offending field(s)."""
    if not errors:
        return "The request is invalid."
    first = errors[0]
    if first.get("type") == "json_invalid":
        return "The request body is not valid JSON."
    field = _field_name(tuple(first.get("loc", ())))
    if first.get("type") == "missing":
        message = f"Field '{field}' is required."
    else:
        message = f"Field '{field}': {first.get('msg', 'is invalid')}."
    if len(errors) > 1:
        message += f" ({len(errors) - 1} more problem(s))"
    return message


async def _app_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AppError)
    return error_response(exc)


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [dict(e) for e in exc.errors()]
    return JSONResponse({"code": "invalid-request", "message": describe_validation_errors(errors)}, 400)


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    err = error_for_status(exc.status_code)
    if exc.status_code not in (404, 405) and isinstance(exc.detail, str):
        err.message = exc.detail
    headers = {**err.headers, **(exc.headers or {})}
    return JSONResponse(err.body(), status_code=exc.status_code, headers=headers)


async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
    request_id = request_id_var.get() or "unknown"
    log.exception("unhandled error", exc_info=exc)
    return JSONResponse({"code": "internal", "message": f"Internal error; request id {request_id}."}, status_code=500)


# How long clients are asked to wait after a database outage answered 503: long enough for a database
# restart or failover to make progress, short enough that a recovered service is used again quickly.
OUTAGE_RETRY_AFTER_SECONDS = 2
# Exception families a database or network outage surfaces as; each is checked with is_outage(), the
# rest of them are bugs and answered like any other unexpected error.
_INFRASTRUCTURE_ERRORS: tuple[type[Exception], ...] = (
    OSError,
    SQLAlchemyError,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,  # a connection the server is dropping (common.outages.is_server_dropping)
)


async def _infrastructure_error(request: Request, exc: Exception) -> JSONResponse:
    """A dependency outage is ``503 unavailable`` + ``Retry-After``, never ``500``."""
    if not is_outage(exc):
        return await _unexpected(request, exc)
    log.warning("dependency unavailable: %s", type(exc).__name__)
    return error_response(Unavailable(retry_after_seconds=OUTAGE_RETRY_AFTER_SECONDS))


def install_error_handlers(app: FastAPI) -> None:
    for family in _INFRASTRUCTURE_ERRORS:
        # Registered per class (not folded into the catch-all) so Starlette answers them in its exception
        # middleware; the catch-all runs in the server-error middleware, which re-raises after answering.
        app.add_exception_handler(family, _infrastructure_error)
    app.add_exception_handler(AppError, _app_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
