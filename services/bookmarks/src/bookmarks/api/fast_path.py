"""PUT and DELETE of one bookmark without FastAPI's per-route machinery.

:class:`BookmarkWriteFastPath` is the first of the app's routes. A request that FastAPI would send to
``PUT`` or ``DELETE /v1/bookmarks/{clientBookmarkId}`` with a valid id is served here by calling the same
endpoint function with what FastAPI would have given it: the verified caller
(:func:`common.auth.current_principal`), the app's sessions and, for a PUT, the body validated by the same
model. Dependency solving, the per-route exception wrapper and the request-scoped exit stack, none of which
these endpoints use, are skipped; they were about a tenth of the process's CPU per write in py-spy.

Only the accepted request takes the short way. A PUT whose body is not a JSON object that the model
accepts goes to FastAPI's own route with the body replayed, so every refusal (its status, code, message
and the order of the checks) is FastAPI's; so does an id the path pattern refuses. Errors raised on the
short way (an invalid token, a deleted user) reach the app's exception handlers as from the route.
``scope["route"]`` is the endpoint's route, so logs, metrics and spans name its template.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.routing import BaseRoute, Match
from starlette.types import Message, Receive, Scope, Send

from bookmarks.api import routes
from bookmarks.api.schemas import ID_PATTERN, BookmarkUpsert
from common.app import flat_routes
from common.auth import current_principal

_ID = re.compile(ID_PATTERN)
_ID_PARAM = "clientBookmarkId"


class BookmarkWriteFastPath(BaseRoute):
    def __init__(self, app_routes: Iterable[Any]) -> None:
        """``app_routes``: the app's routes in matching order (included routers opened)."""
        endpoints = {routes.put_bookmark: "PUT", routes.delete_bookmark: "DELETE"}
        self._by_method: dict[str, APIRoute] = {}
        for route in app_routes:
            if isinstance(route, APIRoute) and (method := endpoints.get(route.endpoint)) is not None:
                self._by_method.setdefault(method, route)
        if len(self._by_method) != len(endpoints):
            raise RuntimeError("the bookmark write routes are not among the app's routes")

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http" or scope.get("root_path"):
            return Match.NONE, {}
        route = self._by_method.get(scope["method"])
        found = route.path_regex.match(scope["path"]) if route is not None else None
        if route is None or found is None or not _ID.fullmatch(found[_ID_PARAM]):
            return Match.NONE, {}
        return Match.FULL, {"route": route, "endpoint": route.endpoint, "path_params": {_ID_PARAM: found[_ID_PARAM]}}

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive, send)
        bookmark_id: str = scope["path_params"][_ID_PARAM]
        if scope["method"] == "DELETE":
            user = await current_principal(request)
            response = await routes.delete_bookmark(bookmark_id, user, request.app.state.sessions)
        else:
            raw = await request.body()
            body = accepted_upsert(request.headers.get("content-type"), raw)
            if body is None:  # FastAPI answers it, as it would without the fast path (mostly a refusal)
                await scope["route"].handle(scope, _replay(raw, receive), send)
                return
            user = await current_principal(request)
            response = await routes.put_bookmark(bookmark_id, body, user, request.app.state.sessions)
        await response(scope, receive, send)


def accepted_upsert(content_type: str | None, raw: bytes) -> BookmarkUpsert | None:
    """The PUT body as FastAPI would validate it, when it is a JSON object sent as ``application/json``
    that the model accepts; None for anything else (FastAPI refuses a body without a content type, and
    the other JSON media types are left to it as well)."""
    if content_type is None or content_type.partition(";")[0].strip().lower() != "application/json":
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    try:
        return BookmarkUpsert.model_validate(value)
    except ValueError:  # pydantic's ValidationError
        return None


def _replay(raw: bytes, receive: Receive) -> Receive:
    """``receive`` for a body already read: ``raw`` once, then the connection's own messages."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": raw, "more_body": False}

    return replay


def install_write_fast_path(app_routes: list[Any]) -> None:
    """Put :class:`BookmarkWriteFastPath` in front of the app's routes."""
    app_routes.insert(0, BookmarkWriteFastPath(flat_routes(app_routes)))
