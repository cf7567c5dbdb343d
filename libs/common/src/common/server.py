"""How every service process is served: uvicorn with a bounded, JSON-speaking HTTP protocol, and
Prometheus metrics on a separate listener that clients never reach.

uvicorn's own protocol classes accept any number of headers of any size (httptools concatenates a long
header value chunk by chunk, which costs the square of its size) and answer the requests they refuse
themselves with ``text/plain``. :class:`EdgeHttpProtocol` is uvicorn's httptools protocol with three
bounds checked while the request head is parsed (request target length, header count, total header
bytes) and header values trimmed of the optional whitespace HTTP allows around them. Every refusal of
the server layer (a bound, a malformed request line, a malformed ``Content-Length``, an invalid URL)
is answered as ``{code, message}`` JSON with ``Connection: close``. It is passed to uvicorn as
``http=``: one class for every service.

WebSocket handshakes the websocket library refuses itself (a missing or invalid ``Sec-WebSocket-Key``,
an unsupported ``Sec-WebSocket-Version``, a wrong method) are answered the same way by
:class:`EdgeWebSocketProtocol` (uvicorn's ``ws=``). Every refusal counts in ``http_server_refusals_total``
by reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import gc
import json
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http import HTTPStatus
from types import FrameType
from typing import Any, ClassVar

import httptools
import uvicorn
from prometheus_client import start_http_server
from uvicorn.config import STARTUP_FAILURE
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.datastructures import Headers
from websockets.exceptions import InvalidHeader, InvalidMethod
from websockets.http11 import Response

from common.logging import flush_logs
from common.metrics import SERVER_REFUSALS, initialise_server_series
from common.settings import CommonSettings


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """What one request head may hold; over a bound the server answers before the app sees anything."""

    max_header_count: int = 100
    max_header_bytes: int = 16 * 1024
    max_target_bytes: int = 8 * 1024

    @property
    def max_head_bytes(self) -> int:
        """Bytes a head may take while still incomplete (request line, headers, line endings)."""
        return self.max_header_bytes + self.max_target_bytes + 2 * self.max_header_count + 1024

    @classmethod
    def from_settings(cls, settings: CommonSettings) -> HttpLimits:
        return cls(
            max_header_count=settings.max_header_count,
            max_header_bytes=settings.max_header_bytes,
            max_target_bytes=settings.max_url_bytes,
        )


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    code: str
    message: str
    reason: str = "malformed-request"  # the `reason` label of http_server_refusals_total

    def body(self) -> bytes:
        return json.dumps({"code": self.code, "message": self.message}).encode()

    def wire(self) -> bytes:
        """The whole HTTP/1.1 response, closing the connection (the rest of the request is unread).

        Like every answer it carries an ``X-Request-Id``: a fresh one, since the request's own headers
        were not (or not completely) read."""
        body = self.body()
        phrase = HTTPStatus(self.status).phrase
        head = (
            f"HTTP/1.1 {self.status} {phrase}\r\n"
            "content-type: application/json\r\n"
            f"content-length: {len(body)}\r\n"
            f"x-request-id: {uuid.uuid4().hex}\r\n"
            "connection: close\r\n\r\n"
        )
        return head.encode("ascii") + body


def headers_too_large(limits: HttpLimits) -> Refusal:
    return Refusal(
        431,
        "headers-too-large",
        f"The request headers exceed the limit ({limits.max_header_count} headers, "
        f"{limits.max_header_bytes} bytes in total).",
        "headers-too-large",
    )


def target_too_long(limits: HttpLimits) -> Refusal:
    return Refusal(
        414,
        "uri-too-long",
        f"The request target (path and query) exceeds {limits.max_target_bytes} bytes.",
        "uri-too-long",
    )


_LINGER_SECONDS = 2.0
_LINGER_BYTES = 1024 * 1024

MALFORMED = Refusal(400, "invalid-request", "The HTTP request is malformed.")


class _Refused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.code)
        self.refusal = refusal


class EdgeHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with bounded request heads and JSON refusals (see module doc)."""

    limits: ClassVar[HttpLimits] = HttpLimits()
    service: ClassVar[str] = "unknown"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_open = True  # between the start of a message and its on_headers_complete
        self._head_bytes = 0  # bytes fed while the head was still open (an upper bound of its size)
        self._header_count = 0
        self._header_bytes = 0
        self._discarded: int | None = None  # bytes read and dropped after a refusal (lingering close)

    def data_received(self, data: bytes) -> None:
        if self._discarded is not None:
            self._discarded += len(data)
            if self._discarded > _LINGER_BYTES:
                self.transport.close()
            return
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        except httptools.HttpParserError as exc:
            cause = exc.__context__
            self.refuse(cause.refusal if isinstance(cause, _Refused) else MALFORMED)
            return
        if self._head_open:
            # Checked after feeding: a head cannot have grown by more than one read past the bound.
            self._head_bytes += len(data)
            if self._head_bytes > self.limits.max_head_bytes:
                self.refuse(headers_too_large(self.limits))

    def refuse(self, refusal: Refusal) -> None:
        """Answer and close. The close lingers (reading and dropping what the client still sends, for a
        bounded time and size): closing with unread data would reset the connection and the client would
        lose the answer it has not read yet."""
        self.logger.info("request refused by the server", extra={"status": refusal.status, "code": refusal.code})
        if self.transport.is_closing() or self._discarded is not None:
            return
        SERVER_REFUSALS.labels(self.service, refusal.reason).inc()
        self._unset_keepalive_if_required()
        self.transport.write(refusal.wire())
        self._discarded = 0
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(_LINGER_SECONDS, self.transport.close)

    def send_400_response(self, msg: str) -> None:  # uvicorn's plain-text answer, kept JSON
        self.refuse(MALFORMED)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_open = True
        self._head_bytes = self._header_count = self._header_bytes = 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > self.limits.max_target_bytes:
            raise _Refused(target_too_long(self.limits))

    def on_header(self, name: bytes, value: bytes) -> None:
        value = value.strip(b" \t")  # optional whitespace around a field value is not part of it (RFC 9110 5.5)
        self._header_count += 1
        self._header_bytes += len(name) + len(value)
        if self._header_count > self.limits.max_header_count or self._header_bytes > self.limits.max_header_bytes:
            raise _Refused(headers_too_large(self.limits))
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_open = False
        super().on_headers_complete()


def websocket_refusal(status: int, exc: Exception | None) -> Refusal:
    """The JSON answer to a handshake the websocket library refused (``exc`` is why, when it says)."""
    if isinstance(exc, InvalidHeader):
        detail = f"header {exc.name} is missing or invalid"
    elif isinstance(exc, InvalidMethod):
        detail = "the method must be GET"
    else:
        detail = "the request is not a valid WebSocket upgrade"
    code = "internal" if status >= 500 else "invalid-websocket-handshake"
    return Refusal(status, code, f"WebSocket handshake refused: {detail}.", "websocket-handshake")


class EdgeWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's websockets protocol whose handshake refusals are ``{code, message}`` JSON (see module doc)."""

    service: ClassVar[str] = "unknown"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The library builds every refusal through reject(); the instance attribute shadows the method.
        self.conn.reject = self._reject  # type: ignore[method-assign]

    def _reject(self, status: Any, text: str) -> Response:
        refusal = websocket_refusal(int(status), self.conn.handshake_exc)
        SERVER_REFUSALS.labels(self.service, refusal.reason).inc()
        body = refusal.body()
        headers = Headers(
            [
                ("Date", email.utils.formatdate(usegmt=True)),
                ("Connection", "close"),
                ("Content-Length", str(len(body))),
                ("Content-Type", "application/json"),
                ("X-Request-Id", uuid.uuid4().hex),
            ]
        )
        return Response(refusal.status, HTTPStatus(refusal.status).phrase, headers, body)


def edge_protocol(limits: HttpLimits, service: str = "unknown") -> type[EdgeHttpProtocol]:
    """The protocol class with these limits (uvicorn instantiates the class it is given per connection)."""
    return type("EdgeHttpProtocol", (EdgeHttpProtocol,), {"limits": limits, "service": service})


def edge_websocket_protocol(service: str = "unknown") -> type[EdgeWebSocketProtocol]:
    return type("EdgeWebSocketProtocol", (EdgeWebSocketProtocol,), {"service": service})


def server_options(settings: CommonSettings, service: str = "unknown") -> dict[str, Any]:
    """The uvicorn options every service runs with (tests serve apps with them too)."""
    initialise_server_series(service)
    return {
        "http": edge_protocol(HttpLimits.from_settings(settings), service),
        "ws": edge_websocket_protocol(service),
        # The client address is the gateway's business (GATEWAY_TRUSTED_PROXY_HOPS, then X-Client-IP):
        # uvicorn's X-Forwarded-For handling would let any local caller choose it.
        "proxy_headers": False,
        "log_config": None,
        "access_log": False,
    }


class QuietServer(uvicorn.Server):
    """uvicorn's server with a once-a-second housekeeping tick instead of ten a second.

    uvicorn wakes its main loop every 100 ms only to refresh the ``Date`` header (once a second) and to
    see whether a signal asked it to stop. Here the tick is a second (the header keeps its one-second
    resolution) and a stop signal wakes the loop at once, so shutdown is not delayed by the longer tick.
    """

    _stop_requested: asyncio.Event | None = None
    _loop: asyncio.AbstractEventLoop | None = None

    async def main_loop(self) -> None:
        freeze_startup_heap()
        self._loop = asyncio.get_running_loop()
        self._stop_requested = asyncio.Event()
        # on_tick refreshes the Date header when its counter is a multiple of 10: 0 makes every tick do it.
        while not await self.on_tick(0):
            try:
                await asyncio.wait_for(self._stop_requested.wait(), timeout=1.0)
            except TimeoutError:
                pass

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        if self._loop is not None and self._stop_requested is not None:
            self._loop.call_soon_threadsafe(self._stop_requested.set)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """uvicorn's, with every pending log line written before it raises a stop signal it caught again:
        the process then ends by that signal, and no exit hook runs after it."""
        with super().capture_signals():
            try:
                yield
            finally:
                flush_logs()


def freeze_startup_heap() -> None:
    """Move everything start-up loaded out of the garbage collector's generations.

    Modules, models, table metadata and warmed caches live as long as the process. Left in the oldest
    generation, every full collection walked all of them: under 16 concurrent writes the bookmarks process
    ran one every ~2 s taking 60-75 ms (the gateway ~55 ms every ~4 s), and every request in flight waited,
    which made the write bench's p99 clusters. Frozen, a full collection takes ~5 ms. Called once the
    application has started (its lifespan has run), after a collection so no garbage is frozen.
    """
    gc.collect()
    gc.freeze()


def serve(
    app: Any, *, service: str, settings: CommonSettings, host: str, port: int, metrics_port: int, **options: Any
) -> None:
    """Run ``app`` on host:port (clients) and Prometheus metrics on host:metrics_port (scrapers only)."""
    start_http_server(metrics_port, addr=host)
    config = uvicorn.Config(app, host=host, port=port, **{**server_options(settings, service), **options})
    server = QuietServer(config)
    with contextlib.suppress(KeyboardInterrupt):  # as uvicorn.run does
        server.run()
    if not server.started:
        sys.exit(STARTUP_FAILURE)
