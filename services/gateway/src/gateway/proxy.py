"""Streaming reverse proxy to the upstream services over one lean pooled HTTP/1.1 client (``gateway.upstream``).

Bodies are streamed in both directions (the request body limit (MAX_BODY_BYTES) of ``common.asgi.EdgeMiddleware`` still
applies: it counts what the body stream receives, and its exception is deliberately left to propagate
so the middleware answers 413). Only the request headers upstreams use pass (:data:`FORWARDED_REQUEST`,
values trimmed); the request id, W3C trace context, ``X-Forwarded-*`` and the client address
(``X-Client-IP``, always overwritten) are set for the next hop. Every step is one pass over the headers.
Hop-by-hop response headers are dropped, and a ``Location`` naming an upstream's own (internal) address
is made relative before it reaches the client.

Failure mapping (metric ``gateway_upstream_errors_total{upstream,kind}``)::

    connection refused / DNS / connect timeout   503 unavailable      kind=connect
    no pooled connection free in time            503 unavailable      kind=pool
    upstream closed without a response           503 unavailable      kind=protocol
    no response within the upstream timeout      504 upstream-timeout kind=timeout
    upstream failed after the headers were sent  connection aborted   kind=stream
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Mapping
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx
from opentelemetry import trace
from opentelemetry.trace import SpanKind
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from common.client_address import CLIENT_ADDRESS_HEADER
from common.errors import AppError, Unavailable
from common.errors import UpstreamTimeout as GatewayTimeout
from common.tracing import inject_http_headers
from gateway.edge import client_ip
from gateway.metrics import UPSTREAM_ERRORS
from gateway.routing import RouteSpec
from gateway.upstream import (
    ConnectFailed,
    Origin,
    PoolTimeout,
    UpstreamError,
    UpstreamPool,
    UpstreamResponse,
    UpstreamTimeout,
)

log = logging.getLogger("gateway.proxy")

RawHeaders = list[tuple[bytes, bytes]]

HOP_BY_HOP = frozenset(
    {b"connection", b"keep-alive", b"te", b"trailer", b"transfer-encoding", b"upgrade", b"proxy-connection"}
)
# The client's request headers an upstream may use; nothing else is copied (an allow-list: a header
# nobody reads upstream costs memory and a parser's time there, and may carry what should not travel).
# Everything the next hop needs besides these is set by this hop (request id, trace context,
# X-Forwarded-*, X-Client-IP); `expect` is answered by our own server and never passed on.
FORWARDED_REQUEST = frozenset(
    {
        b"accept",
        b"accept-language",
        b"authorization",
        b"content-encoding",
        b"content-length",
        b"content-type",
        b"if-match",
        b"if-none-match",
        b"user-agent",
        b"x-admin-token",
    }
)
# Client headers this hop reads to compute its own (never copied as they are).
_EDGE_INPUTS = frozenset(
    {
        b"connection",
        b"host",
        b"x-forwarded-for",
        b"x-forwarded-proto",
        b"x-forwarded-host",
        b"traceparent",
        b"tracestate",
    }
)
# Response headers our own server and middleware write; copies from upstream would be duplicates.
_RECOMPUTED_RESPONSE = frozenset({b"date", b"server", b"x-request-id"})

# Upstreams are uvicorn with a 5 s keep-alive timeout: expiring idle pooled connections sooner avoids
# sending a request on a connection the upstream is closing at that moment.
_KEEPALIVE_EXPIRY_SECONDS = 4.0


def strip_hop_by_hop(headers: Iterable[tuple[bytes, bytes]]) -> RawHeaders:
    """Drop RFC 9110 hop-by-hop headers, ``Proxy-*`` and every header the Connection header names."""
    headers = list(headers)
    named: set[bytes] = set()
    for key, value in headers:
        if key.lower() == b"connection":
            named.update(token.strip().lower() for token in value.split(b",") if token.strip())
    kept: RawHeaders = []
    for key, value in headers:
        lowered = key.lower()
        if lowered in HOP_BY_HOP or lowered in named or lowered.startswith(b"proxy-"):
            continue
        kept.append((key, value))
    return kept


def _first(headers: Mapping[bytes, list[bytes]], name: bytes) -> bytes | None:
    values = headers.get(name)
    return values[0] if values else None


def _no_cookie_jar() -> CookieJar:
    # The client is shared by every user: a Set-Cookie from one user's response must never be stored
    # and replayed on another's request. Cookies still pass through as plain headers.
    return CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


class UpstreamProxy:
    """Forwards requests to the upstreams over :class:`gateway.upstream.UpstreamPool`."""

    def __init__(
        self,
        *,
        upstreams: Mapping[str, str],
        timeout_seconds: float,
        max_connections: int,
        max_keepalive: int,
        trusted_proxy_hops: int = 0,
        retry_after_seconds: int = 2,
    ) -> None:
        self.upstreams = {name: httpx.URL(url.rstrip("/")) for name, url in upstreams.items()}
        self.origins = {name: _origin(url) for name, url in self.upstreams.items()}
        self.trusted_proxy_hops = trusted_proxy_hops
        self.retry_after_seconds = retry_after_seconds
        # The proxied requests go over the lean pool; the few calls of our own (JWKS, readiness, the
        # OpenAPI catalog) over a general-purpose client.
        self.pool = UpstreamPool(
            timeout=timeout_seconds,
            max_connections=max_connections,
            max_keepalive=max_keepalive,
            keepalive_expiry=_KEEPALIVE_EXPIRY_SECONDS,
        )
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_seconds),
            limits=httpx.Limits(
                max_connections=20, max_keepalive_connections=5, keepalive_expiry=_KEEPALIVE_EXPIRY_SECONDS
            ),
            follow_redirects=False,
            trust_env=False,  # an HTTP(S)_PROXY meant for outbound traffic must not capture service calls
            cookies=_no_cookie_jar(),
        )
        self.tracer = trace.get_tracer("gateway.proxy")

    async def aclose(self) -> None:
        await self.pool.aclose()
        await self.client.aclose()

    def request_headers(self, request: Request) -> RawHeaders:
        """The headers of the upstream request: one pass over the client's, then this hop's own."""
        scope = request.scope
        headers: RawHeaders = []
        edge: dict[bytes, list[bytes]] = {}
        for key, value in scope.get("headers", ()):
            value = value.strip(b" \t")
            if key in FORWARDED_REQUEST:
                headers.append((key, value))
            elif key in _EDGE_INPUTS:
                edge.setdefault(key, []).append(value)
        named = {t.strip().lower() for v in edge.get(b"connection", []) for t in v.split(b",")}
        if named - {b"", b"keep-alive", b"close"}:  # headers the client marked hop-by-hop do not pass
            headers = [(k, v) for k, v in headers if k not in named]

        peer = str((scope.get("client") or ("unknown",))[0]).encode("latin-1")
        headers.append((b"x-forwarded-for", b", ".join([*edge.get(b"x-forwarded-for", []), peer])))
        address = scope.get("state", {}).get("client_ip") or client_ip(scope, self.trusted_proxy_hops)
        headers.append((CLIENT_ADDRESS_HEADER.encode(), str(address).encode("latin-1")))
        trusted = self.trusted_proxy_hops > 0
        proto = _first(edge, b"x-forwarded-proto") if trusted else None
        headers.append((b"x-forwarded-proto", proto or str(scope.get("scheme", "http")).encode()))
        forwarded_host = _first(edge, b"x-forwarded-host") if trusted else None
        headers.append((b"x-forwarded-host", forwarded_host or _first(edge, b"host") or b""))
        request_id = scope.get("state", {}).get("request_id")
        if request_id:
            headers.append((b"x-request-id", str(request_id).encode("latin-1")))
        carrier = inject_http_headers({})
        if carrier:
            headers.extend((k.encode("latin-1"), v.encode("latin-1")) for k, v in carrier.items())
        else:  # tracing not set up: keep the client's context rather than dropping it
            headers.extend((k, v) for k in (b"traceparent", b"tracestate") for v in edge.get(k, [])[:1])
        return headers

    def public_location(self, location: bytes) -> bytes:
        """A Location naming an upstream's own address becomes relative (path and query only)."""
        try:
            url = httpx.URL(location.decode("latin-1"))
        except (httpx.InvalidURL, UnicodeDecodeError):
            return b"/"
        if url.is_relative_url or not any(_same_origin(url, base) for base in self.upstreams.values()):
            return location
        return url.raw_path or b"/"

    @staticmethod
    def target(request: Request) -> bytes:
        """The request target as the client sent it (raw path and query)."""
        raw_path: bytes = request.scope.get("raw_path") or request.scope["path"].encode()
        query: bytes = request.scope.get("query_string", b"")
        return raw_path + (b"?" + query if query else b"")

    async def send(self, request: Request, spec: RouteSpec, *, content: bytes | None = None) -> UpstreamResponse:
        """Forward ``request`` (its streamed body, or ``content`` when already read); the open response.

        The caller owns the result and must close it (``UpstreamStreamingResponse`` does).
        """
        method = request.method
        body: bytes | AsyncIterator[bytes] | None = content
        if content is None and _has_body(request):
            body = request.stream()
        with self.tracer.start_as_current_span(f"{method} {spec.upstream}", kind=SpanKind.CLIENT) as span:
            try:
                response = await self.pool.request(
                    self.origins[spec.upstream],
                    method.encode("ascii"),
                    self.target(request),
                    self.request_headers(request),
                    body,
                )
            except UpstreamError as exc:
                raise self.failure(spec, exc) from exc
            span.set_attribute("http.response.status_code", response.status_code)
            return response

    def failure(self, spec: RouteSpec, exc: UpstreamError) -> AppError:
        """Count and log a failed upstream call; the error to answer with."""
        UPSTREAM_ERRORS.labels(spec.upstream, exc.kind).inc()
        # The messages of the pool's errors never quote a request header (a token, the admin secret).
        log.warning(
            "upstream request failed",
            extra={"upstream": spec.upstream, "kind": exc.kind, "error": f"{type(exc).__name__}: {exc}"},
        )
        return self.answer(exc)

    def answer(self, exc: UpstreamError) -> AppError:
        retry = self.retry_after_seconds
        if isinstance(exc, PoolTimeout):
            return Unavailable("The gateway is saturated; try again shortly.", retry_after_seconds=retry)
        if isinstance(exc, ConnectFailed):
            return Unavailable("An upstream service is unavailable.", retry_after_seconds=retry)
        if isinstance(exc, UpstreamTimeout):
            return GatewayTimeout()
        return Unavailable("An upstream service failed to answer.", retry_after_seconds=retry)

    def response_headers(self, upstream: UpstreamResponse, extra: Mapping[str, str] | None = None) -> RawHeaders:
        headers: RawHeaders = []
        for key, value in strip_hop_by_hop(upstream.raw_headers):
            lowered = key.lower()
            if lowered == b"location":
                value = self.public_location(value)
            if lowered not in _RECOMPUTED_RESPONSE:
                headers.append((key, value))
        for name, text in (extra or {}).items():
            headers.append((name.lower().encode("latin-1"), text.encode("latin-1")))
        return headers


def _same_origin(url: httpx.URL, base: httpx.URL) -> bool:
    return (url.scheme, url.host, url.port) == (base.scheme, base.host, base.port)


def _has_body(request: Request) -> bool:
    # HTTP/1.1 framing: without Content-Length or Transfer-Encoding a request has no body, and sending
    # an empty chunked body instead would change what the upstream sees.
    length = request.headers.get("content-length")
    return (length is not None and length != "0") or "transfer-encoding" in request.headers


class UpstreamStreamingResponse(StreamingResponse):
    """Relays an open upstream response as it arrives and always returns its connection to the pool.

    A body that has already arrived whole (most answers: the head and a small body come in one read)
    is sent in one message, without the streaming machinery (a task watching for the client leaving).
    """

    def __init__(self, upstream: UpstreamResponse, *, upstream_name: str, headers: RawHeaders) -> None:
        self._upstream = upstream
        self._upstream_name = upstream_name
        super().__init__(self._relay(), status_code=upstream.status_code)
        self.raw_headers = headers

    async def _relay(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._upstream.aiter_raw():
                yield chunk
        except UpstreamError as exc:
            # The status line is already out: all that is left is to abort so the client sees truncation.
            UPSTREAM_ERRORS.labels(self._upstream_name, "stream").inc()
            log.warning("upstream body failed mid-stream", extra={"upstream": self._upstream_name, "error": str(exc)})
            raise

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            if self._upstream.complete:
                body = b"".join([chunk async for chunk in self._upstream.aiter_raw()])
                await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
                await send({"type": "http.response.body", "body": body})
            else:
                await super().__call__(scope, receive, send)
        finally:
            await self._upstream.aclose()


def _origin(url: httpx.URL) -> Origin:
    tls = url.scheme == "https"
    return Origin(host=url.host, port=url.port or (443 if tls else 80), tls=tls)
