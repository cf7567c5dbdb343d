"""The gateway's routes: one proxy route per route-table entry, the WebSocket, and the API docs."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from fastapi import APIRouter, Request, WebSocket
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.routing import APIRoute
from starlette.requests import ClientDisconnect
from starlette.routing import BaseRoute, Match
from starlette.types import Receive, Scope, Send

from common.app import flat_routes
from common.auth import Principal
from common.context import user_id_var
from common.errors import AppError, InvalidRequest, NotFound, RateLimited, Unauthorized
from gateway.api.deps import gateway_of
from gateway.docs import ASSETS_PATH, CONTENT_SECURITY_POLICY, DOCS_PATH, asset, docs_html
from gateway.edge import client_ip
from gateway.metrics import RATE_LIMITED
from gateway.proxy import UpstreamStreamingResponse
from gateway.realtime import serve_events
from gateway.routing import PROXY_METHODS, ROUTES, AuthMode, Effect, RouteSpec, has_dot_segments
from gateway.state import Gateway
from gateway.upstream import UpstreamError

log = logging.getLogger("gateway.api")

OPENAPI_PATH = "/v1/openapi.json"
# Status for a request whose client went away mid-upload (nginx's convention); only the log sees it.
_CLIENT_CLOSED = 499
# A session response is a few hundred bytes; anything larger is relayed without being inspected.
_MAX_INSPECTED_BODY = 64 * 1024


async def _authenticate(
    request: Request, spec: RouteSpec, gateway: Gateway
) -> tuple[Principal | None, Unauthorized | None]:
    header = request.headers.get("authorization")
    if spec.auth is AuthMode.REQUIRED or (spec.auth is AuthMode.OPTIONAL and header is not None):
        try:
            return await gateway.auth.authenticate_header(header), None
        except Unauthorized as exc:
            return None, exc
    return None, None


def caller_address(request: Request, gateway: Gateway) -> str:
    """The client's address, determined once per request: the IP rate limit and the X-Client-IP header
    passed upstream (``UpstreamProxy.request_headers``) use the same value."""
    address: str | None = getattr(request.state, "client_ip", None)
    if address is None:
        address = client_ip(request.scope, gateway.settings.trusted_proxy_hops)
        request.state.client_ip = address
    return address


def _rate_limit(
    request: Request, principal: Principal | None, gateway: Gateway, *, image: bool = False
) -> dict[str, str]:
    """Take one request from the caller's bucket; the RateLimit-* headers, or :class:`RateLimited`."""
    if principal is not None:
        limiter, key, scope = gateway.user_limiter, str(principal.user_id), "user"
    elif image:
        limiter, key, scope = gateway.image_limiter, caller_address(request, gateway), "image"
    else:
        limiter, key, scope = gateway.ip_limiter, caller_address(request, gateway), "ip"
    if limiter is None:
        return {}
    decision = limiter.take(key)
    headers = decision.headers()
    if not decision.allowed:
        RATE_LIMITED.labels(scope).inc()
        raise RateLimited(retry_after_seconds=decision.retry_after_seconds, headers=headers)
    return headers


async def forward(request: Request, spec: RouteSpec, gateway: Gateway) -> Response:
    if has_dot_segments(request.scope["path"]):
        raise NotFound()
    caller_address(request, gateway)
    principal, refused = await _authenticate(request, spec, gateway)
    # Failed authentications count against the client's address, so token guessing is throttled too.
    limit_headers = _rate_limit(request, principal, gateway, image=spec.image)
    if refused is not None:
        refused.headers.update(limit_headers)
        raise refused
    if principal is not None:
        request.state.user_id = str(principal.user_id)
        user_id_var.set(str(principal.user_id))
    try:
        if spec.effect is Effect.IDENTITY_LINK and principal is not None:
            return await _forward_identity_link(request, spec, gateway, principal, limit_headers)
        upstream = await gateway.proxy.send(request, spec)
    except ClientDisconnect:
        return Response(status_code=_CLIENT_CLOSED)
    except AppError as exc:  # 503/504 from the proxy still tell the client where it stands
        exc.headers.update(limit_headers)
        raise
    if (
        spec.effect is Effect.ACCOUNT_DELETION
        and principal is not None
        and request.method == "DELETE"
        and upstream.status_code == 204
    ):
        # Before answering: the client's very next request must already be refused here, even if the
        # user.deleted event has not reached this replica yet (docs/api-guide.md, section 2).
        gateway.deny(principal.user_id, reason="account deleted")
    headers = gateway.proxy.response_headers(upstream, limit_headers)
    return UpstreamStreamingResponse(upstream, upstream_name=spec.upstream, headers=headers)


async def _forward_identity_link(
    request: Request, spec: RouteSpec, gateway: Gateway, principal: Principal, limit_headers: Mapping[str, str]
) -> Response:
    """Proxy an OAuth call made with a Bearer, noticing when it merged the caller away.

    A link that hits an identity owned by another user signs into that owner and deletes the (anonymous)
    caller: the session that comes back belongs to a different user. Like an account deletion, the
    caller's token must be refused from the moment this response is returned.
    """
    body = await request.body()
    upstream = await gateway.proxy.send(request, spec, content=body)
    try:
        inspect = (
            upstream.status_code == 200
            and _json_object(body).get("link") is True
            and (upstream.header(b"content-encoding") or b"identity") == b"identity"
            and (upstream.header(b"content-length") or b"x").isdigit()
            and int(upstream.header(b"content-length") or 0) <= _MAX_INSPECTED_BODY
        )
        if not inspect:
            headers = gateway.proxy.response_headers(upstream, limit_headers)
            return UpstreamStreamingResponse(upstream, upstream_name=spec.upstream, headers=headers)
        try:
            raw = b"".join([chunk async for chunk in upstream.aiter_raw()])
        except UpstreamError as exc:
            raise gateway.proxy.failure(spec, exc) from exc
        user = _json_object(raw).get("user")
        new_user_id = user.get("id") if isinstance(user, dict) else None
        if isinstance(new_user_id, str) and new_user_id != str(principal.user_id):
            gateway.deny(principal.user_id, reason="account merged")
        response = Response(content=raw, status_code=upstream.status_code)
        response.raw_headers = gateway.proxy.response_headers(upstream, limit_headers)
        await upstream.aclose()
        return response
    except BaseException:
        await upstream.aclose()
        raise


def _json_object(raw: bytes) -> dict[str, object]:
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _proxy_endpoint(spec: RouteSpec) -> Callable[[Request], Awaitable[Response]]:
    async def proxy(request: Request) -> Response:
        return await forward(request, spec, gateway_of(request))

    proxy.route_spec = spec  # type: ignore[attr-defined]  # how ProxyFastPath recognises its routes
    return proxy


async def openapi_document(request: Request) -> Response:
    gateway = gateway_of(request)
    headers = _rate_limit(request, None, gateway)
    return JSONResponse(gateway.catalog.document(), headers=headers)


async def docs(request: Request) -> Response:
    gateway = gateway_of(request)
    headers = {**_rate_limit(request, None, gateway), "Content-Security-Policy": CONTENT_SECURITY_POLICY}
    return HTMLResponse(docs_html(title=gateway.catalog.title, spec_url=OPENAPI_PATH), headers=headers)


async def docs_asset(request: Request) -> Response:
    """A file of the docs page; cached by browsers for a day and revalidated by ETag."""
    found = asset(request.path_params["name"])
    if found is None:
        raise NotFound("Not found.")
    headers = {
        "Content-Security-Policy": CONTENT_SECURITY_POLICY,
        "Cache-Control": "public, max-age=86400",
        "ETag": found.etag,
        "X-Content-Type-Options": "nosniff",
    }
    if request.headers.get("if-none-match") == found.etag:
        return Response(status_code=304, headers=headers)
    return Response(found.body, media_type=found.media_type, headers=headers)


async def events_without_upgrade(request: Request) -> Response:
    raise InvalidRequest("GET /v1/events must be a WebSocket upgrade.")


async def events(websocket: WebSocket) -> None:
    gateway = gateway_of(websocket)
    await serve_events(websocket, auth=gateway.auth, hub=gateway.hub, limiter=gateway.user_limiter)


class ProxyFastPath(BaseRoute):
    """The proxy routes, dispatched without FastAPI's per-route machinery.

    Placed first in the app's routes. For a request that FastAPI would send to a proxy route, it selects
    that same route (the first proxy template of the path's ``/v1/<section>`` that matches, in table
    order) and calls :func:`forward` directly. The route's own request handling (dependency solving,
    the per-route exception wrapper, a request-scoped exit stack), none of which the proxy endpoint
    uses, was about a fifth of the gateway's CPU per write. ``scope["route"]`` is the proxy route, so
    logs, metrics and spans name its template, and errors reach the app's exception handlers as
    before. Anything else (another method, a section that a non-proxy route owns, a path no template
    matches) is left to the routes behind it, so 404 and 405 answers do not change.
    """

    def __init__(self, routes: Iterable[Any]) -> None:
        """``routes``: the app's routes in matching order (included routers opened, see ``common.app.flat_routes``)."""
        routes = list(routes)
        reserved = {_section(r.path) for r in routes if _spec_of(r) is None and hasattr(r, "path")}
        self._by_section: dict[str, list[tuple[APIRoute, RouteSpec]]] = {}
        for route in routes:
            spec = _spec_of(route)
            if spec is not None and _section(spec.template) not in reserved:
                self._by_section.setdefault(_section(spec.template), []).append((route, spec))

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http" or scope.get("root_path"):
            return Match.NONE, {}
        path: str = scope["path"]
        for route, spec in self._by_section.get(_section(path), ()):
            found = route.path_regex.match(path)
            if found is None:
                continue
            if scope["method"] not in (route.methods or ()):
                return Match.NONE, {}
            params = {key: route.param_convertors[key].convert(value) for key, value in found.groupdict().items()}
            return Match.FULL, {"route": route, "endpoint": route.endpoint, "path_params": params, _SPEC_KEY: spec}
        return Match.NONE, {}

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive, send)
        response = await forward(request, scope[_SPEC_KEY], gateway_of(request))
        await response(scope, receive, send)


_SPEC_KEY = "gateway.route_spec"


def _section(path: str) -> str:
    """``/v1/bookmarks/x`` → ``bookmarks``: every template's section is literal, so it picks the candidates."""
    parts = path.split("/", 3)
    return parts[2] if len(parts) > 2 and parts[1] == "v1" else ""


def install_proxy_fast_path(routes: list[Any]) -> None:
    """Put :class:`ProxyFastPath` in front of ``routes`` (the app's), for the proxy routes among them."""
    routes.insert(0, ProxyFastPath(flat_routes(routes)))


def _spec_of(route: Any) -> RouteSpec | None:
    """The table entry a proxy route serves (set by ``_proxy_endpoint``); None for any other route."""
    spec: RouteSpec | None = getattr(getattr(route, "endpoint", None), "route_spec", None)
    return spec


def build_router() -> APIRouter:
    router = APIRouter()
    router.add_api_websocket_route("/v1/events", events)
    router.add_api_route("/v1/events", events_without_upgrade, methods=["GET"], include_in_schema=False)
    router.add_api_route(OPENAPI_PATH, openapi_document, methods=["GET"], include_in_schema=False)
    router.add_api_route(DOCS_PATH, docs, methods=["GET"], include_in_schema=False)
    router.add_api_route(ASSETS_PATH + "/{name}", docs_asset, methods=["GET"], include_in_schema=False)
    for spec in ROUTES:
        router.add_api_route(
            spec.template,
            _proxy_endpoint(spec),
            methods=list(PROXY_METHODS),
            include_in_schema=False,
            name=f"proxy {spec.template}",
        )
    return router
