"""Streaming reverse proxy to the upstream services over one pooled HTTP client.

Bodies are streamed in both directions (the request body limit (MAX_BODY_BYTES) of ``common.asgi.EdgeMiddleware`` still
applies: it counts what the body stream receives, and its exception is deliberately left to propagate
so the middleware answers 413). Hop-by-hop headers are dropped both ways; the request id, W3C trace
context and ``X-Forwarded-*`` are set for the next hop.

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

from common.errors import AppError, Unavailable, UpstreamTimeout
from common.tracing import inject_http_headers
from gateway.metrics import UPSTREAM_ERRORS
from gateway.routing import RouteSpec

log = logging.getLogger("gateway.proxy")

RawHeaders = list[tuple[bytes, bytes]]

HOP_BY_HOP = frozenset(
    {b"connection", b"keep-alive", b"te", b"trailer", b"transfer-encoding", b"upgrade", b"proxy-connection"}
)
# Request headers this hop sets itself instead of copying the client's. `expect` is answered by our own
# server (100-continue) and must not make the upstream wait for a second handshake.
_RECOMPUTED_REQUEST = frozenset(
    {
        b"host",
        b"x-request-id",
        b"x-forwarded-for",
        b"x-forwarded-proto",
        b"x-forwarded-host",
        b"traceparent",
        b"tracestate",
        b"expect",
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


def _no_cookie_jar() -> CookieJar:
    # The client is shared by every user: a Set-Cookie from one user's response must never be stored
    # and replayed on another's request. Cookies still pass through as plain headers.
    return CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


class UpstreamProxy:
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
        self.trusted_proxy_hops = trusted_proxy_hops
        self.retry_after_seconds = retry_after_seconds
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_seconds),
            limits=httpx.Limits(
                max_connections=max_connections,
                max_keepalive_connections=max_keepalive,
                keepalive_expiry=_KEEPALIVE_EXPIRY_SECONDS,
            ),
            follow_redirects=False,
            trust_env=False,  # an HTTP(S)_PROXY meant for outbound traffic must not capture service calls
            cookies=_no_cookie_jar(),
        )
        self.tracer = trace.get_tracer("gateway.proxy")

    async def aclose(self) -> None:
        await self.client.aclose()

    def request_headers(self, request: Request) -> RawHeaders:
        scope = request.scope
        incoming: RawHeaders = list(scope.get("headers", ()))
        forwarded_for = [v for k, v in incoming if k == b"x-forwarded-for"]
        forwarded_proto = next((v for k, v in incoming if k == b"x-forwarded-proto"), None)
        forwarded_host = next((v for k, v in incoming if k == b"x-forwarded-host"), None)
        host = next((v for k, v in incoming if k == b"host"), b"")
        headers = [(k, v) for k, v in strip_hop_by_hop(incoming) if k not in _RECOMPUTED_REQUEST]

        peer = (scope.get("client") or ("unknown",))[0]
        headers.append((b"x-forwarded-for", b", ".join([*forwarded_for, str(peer).encode("latin-1")])))
        trusted = self.trusted_proxy_hops > 0
        proto = forwarded_proto if trusted and forwarded_proto else str(scope.get("scheme", "http")).encode()
        headers.append((b"x-forwarded-proto", proto))
        headers.append((b"x-forwarded-host", forwarded_host if trusted and forwarded_host else host))
        request_id = scope.get("state", {}).get("request_id")
        if request_id:
            headers.append((b"x-request-id", str(request_id).encode("latin-1")))
        carrier = inject_http_headers({})
        if carrier:
            headers.extend((k.encode("latin-1"), v.encode("latin-1")) for k, v in carrier.items())
        else:  # tracing not set up: keep the client's context rather than dropping it
            headers.extend((k, v) for k, v in incoming if k in (b"traceparent", b"tracestate"))
        return headers

    def upstream_url(self, spec: RouteSpec, request: Request) -> httpx.URL:
        raw_path: bytes = request.scope.get("raw_path") or request.scope["path"].encode()
        query: bytes = request.scope.get("query_string", b"")
        target = raw_path + (b"?" + query if query else b"")
        return self.upstreams[spec.upstream].copy_with(raw_path=target)

    async def send(self, request: Request, spec: RouteSpec, *, content: bytes | None = None) -> httpx.Response:
        """Forward ``request`` (its streamed body, or ``content`` when already read); the open response.

        The caller owns the result and must close it (``UpstreamStreamingResponse`` does).
        """
        method = request.method
        body: bytes | AsyncIterator[bytes] | None = content
        if content is None and _has_body(request):
            body = request.stream()
        with self.tracer.start_as_current_span(f"{method} {spec.upstream}", kind=SpanKind.CLIENT) as span:
            upstream_request = httpx.Request(
                method,
                self.upstream_url(spec, request),
                headers=self.request_headers(request),
                content=body,
            )
            try:
                response = await self.client.send(upstream_request, stream=True)
            except httpx.HTTPError as exc:
                raise self.failure(spec, exc) from exc
            span.set_attribute("http.response.status_code", response.status_code)
            return response

    def failure(self, spec: RouteSpec, exc: httpx.HTTPError) -> AppError:
        """Count and log a failed upstream call; the error to answer with."""
        kind, error = self.classify(exc)
        UPSTREAM_ERRORS.labels(spec.upstream, kind).inc()
        log.warning(
            "upstream request failed",
            extra={"upstream": spec.upstream, "kind": kind, "error": f"{type(exc).__name__}: {exc}"},
        )
        return error

    def classify(self, exc: httpx.HTTPError) -> tuple[str, AppError]:
        retry = self.retry_after_seconds
        if isinstance(exc, httpx.PoolTimeout):
            return "pool", Unavailable("The gateway is saturated; try again shortly.", retry_after_seconds=retry)
        if isinstance(exc, httpx.ConnectTimeout | httpx.ConnectError):
            return "connect", Unavailable("An upstream service is unavailable.", retry_after_seconds=retry)
        if isinstance(exc, httpx.TimeoutException):
            return "timeout", UpstreamTimeout()
        return "protocol", Unavailable("An upstream service failed to answer.", retry_after_seconds=retry)

    @staticmethod
    def response_headers(upstream: httpx.Response, extra: Mapping[str, str] | None = None) -> RawHeaders:
        headers = [(k, v) for k, v in strip_hop_by_hop(upstream.headers.raw) if k.lower() not in _RECOMPUTED_RESPONSE]
        for key, value in (extra or {}).items():
            headers.append((key.lower().encode("latin-1"), value.encode("latin-1")))
        return headers


def _has_body(request: Request) -> bool:
    # HTTP/1.1 framing: without Content-Length or Transfer-Encoding a request has no body, and sending
    # an empty chunked body instead would change what the upstream sees.
    length = request.headers.get("content-length")
    return (length is not None and length != "0") or "transfer-encoding" in request.headers


class UpstreamStreamingResponse(StreamingResponse):
    """Relays an open upstream response as it arrives and always returns its connection to the pool."""

    def __init__(self, upstream: httpx.Response, *, upstream_name: str, headers: RawHeaders) -> None:
        self._upstream = upstream
        self._upstream_name = upstream_name
        super().__init__(self._relay(), status_code=upstream.status_code)
        self.raw_headers = headers

    async def _relay(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._upstream.aiter_raw():
                yield chunk
        except httpx.HTTPError as exc:
            # The status line is already out: all that is left is to abort so the client sees truncation.
            UPSTREAM_ERRORS.labels(self._upstream_name, "stream").inc()
            log.warning("upstream body failed mid-stream", extra={"upstream": self._upstream_name, "error": str(exc)})
            raise

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self._upstream.aclose()
