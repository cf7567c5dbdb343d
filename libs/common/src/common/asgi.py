"""One pure-ASGI middleware for the edge of every service: request id, body limit, tracing span,
metrics by route template, JSON access log, and a last-resort ``{code, message}`` 500.

Pure ASGI rather than ``BaseHTTPMiddleware`` because it sits on every request's hot path and must not
buffer streaming bodies.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind
from prometheus_client import Histogram
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from common.context import request_id_var
from common.errors import PayloadTooLarge
from common.metrics import HTTP_IN_FLIGHT, HTTP_REQUEST_DURATION
from common.tracing import context_from_http_headers

access_log = logging.getLogger("access")
log = logging.getLogger("common.asgi")

_REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_UNLOGGED_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


class _BodyTooLarge(StarletteHTTPException):
    """Raised from ``receive``. An HTTPException because FastAPI re-raises those from body parsing
    (any other exception there becomes a 400); the app's handlers then answer 413."""

    def __init__(self, message: str) -> None:
        super().__init__(status_code=413, detail=message)


_TRACE_HEADERS = frozenset({b"traceparent", b"tracestate", b"baggage"})  # what the propagators read


def _edge_headers(scope: Scope) -> tuple[str | None, str | None, dict[str, str]]:
    """One pass over the request headers: X-Request-Id, Content-Length and the W3C trace context and baggage
    (empty unless a ``traceparent`` came); the first of each."""
    request_id = length = None
    trace_context: dict[str, str] = {}
    for key, value in scope.get("headers", ()):
        if key == b"x-request-id":
            request_id = request_id or value.decode("latin-1")
        elif key == b"content-length":
            length = length or value.decode("latin-1")
        elif key in _TRACE_HEADERS:
            trace_context.setdefault(key.decode(), value.decode("latin-1"))
    return request_id, length, trace_context if "traceparent" in trace_context else {}


def route_template(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    return str(path) if path else "unmatched"


class EdgeMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        service: str,
        max_body_bytes: int = 1024 * 1024,
        route_body_limits: Mapping[str, int] | None = None,
    ) -> None:
        """``route_body_limits``: ``{"POST /v1/imports": n}`` overrides ``max_body_bytes`` for exactly that
        method and path (``MAX_BODY_BYTES_BY_ROUTE``); every other request keeps the global limit."""
        self.app = app
        self.service = service
        self.max_body_bytes = max_body_bytes
        self.route_body_limits = {k.strip(): v for k, v in (route_body_limits or {}).items()}
        self.tracer = trace.get_tracer(f"{service}.http")
        self.in_flight = HTTP_IN_FLIGHT.labels(service)
        self._durations: dict[tuple[str, str, int], Histogram] = {}  # by (method, route, status)

    def body_limit(self, method: str, path: str) -> int:
        return self.route_body_limits.get(f"{method} {path}", self.max_body_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return

        incoming, declared, trace_headers = _edge_headers(scope)
        request_id = incoming if incoming and _REQUEST_ID_RE.match(incoming) else uuid.uuid4().hex
        request_id_var.set(request_id)
        scope.setdefault("state", {})["request_id"] = request_id

        # Continue the caller's trace when it sent one; otherwise keep the current context rather than
        # replacing it with an empty one (which would split a request into two traces).
        token = otel_context.attach(context_from_http_headers(trace_headers)) if trace_headers else None
        try:
            if scope["type"] == "websocket":
                await self.app(scope, receive, send)
                return
            await self._http(scope, receive, send, request_id, declared)
        finally:
            if token is not None:
                otel_context.detach(token)

    async def _http(self, scope: Scope, receive: Receive, send: Send, request_id: str, declared: str | None) -> None:
        method = scope["method"]
        started = time.perf_counter()
        status = 500
        response_started = False
        limit = self.body_limit(method, scope["path"])
        too_large = PayloadTooLarge.over(limit)
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._send_error(send, 413, too_large.body(), request_id)
            self._observe(scope, method, 413, started)
            return

        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _BodyTooLarge(too_large.message)
            return message

        async def send_wrapper(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status = message["status"]
                response_started = True
                message["headers"] = [*message.get("headers", []), (b"x-request-id", request_id.encode())]
            await send(message)

        self.in_flight.inc()
        with self.tracer.start_as_current_span(f"{method} {scope['path']}", kind=SpanKind.SERVER) as span:
            try:
                await self.app(scope, limited_receive, send_wrapper)
            except _BodyTooLarge:
                status = 413
                if not response_started:
                    await self._send_error(send, 413, too_large.body(), request_id)
            except Exception:
                status = 500
                log.exception("unhandled error escaped the app")
                if not response_started:
                    body = {"code": "internal", "message": f"Internal error; request id {request_id}."}
                    await self._send_error(send, 500, body, request_id)
            finally:
                self.in_flight.dec()
                route = route_template(scope)
                span.update_name(f"{method} {route}")
                span.set_attribute("http.request.method", method)
                span.set_attribute("http.route", route)
                span.set_attribute("http.response.status_code", status)
                self._observe(scope, method, status, started)

    def _observe(self, scope: Scope, method: str, status: int, started: float) -> None:
        elapsed = time.perf_counter() - started
        route = route_template(scope)
        key = (method, route, status)
        histogram = self._durations.get(key)
        if histogram is None:  # one child per method, route template and status: a bounded set
            histogram = self._durations[key] = HTTP_REQUEST_DURATION.labels(self.service, method, route, str(status))
        histogram.observe(elapsed)
        if scope["path"] in _UNLOGGED_PATHS:
            return
        state: dict[str, Any] = scope.get("state", {})
        access_log.info(
            "request",
            extra={
                "method": method,
                "path": scope["path"],
                "route": route,
                "status": status,
                "duration_ms": round(elapsed * 1000, 2),
                "user_id": state.get("user_id"),
            },
        )

    @staticmethod
    async def _send_error(send: Send, status: int, body: dict[str, str], request_id: str) -> None:
        payload = json.dumps(body).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode()),
                    (b"x-request-id", request_id.encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})
