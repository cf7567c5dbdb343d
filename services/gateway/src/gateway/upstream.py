"""A lean pooled HTTP/1.1 client for the proxy hot path: asyncio protocols and httptools' C parser.

The general-purpose client (httpx over httpcore and anyio) cost more gateway CPU per proxied request
than everything else the gateway does (about 40 % of its samples, a ``poll()`` per
pooled connection per request to find a live one among them). This client does only what a reverse proxy to
our own HTTP/1.1 upstreams needs:

- one pool per upstream origin, most recently used connection first; a connection learns that its
  peer closed from the event loop (``connection_lost``), so no socket is probed before reuse; idle
  connections expire after ``keepalive_expiry`` (shorter than uvicorn's keep-alive);
- at most ``max_connections`` requests in flight (``pool`` failure after ``timeout`` waiting for one)
  and at most ``max_connections`` open connections, of which ``max_keepalive`` idle ones per origin;
- request bodies streamed with write flow control; a body without ``Content-Length`` goes chunked;
- response bodies received with read flow control (at most ``_READ_BUFFER`` bytes buffered), de-chunked;
- every wait bounded by ``timeout`` (connect, pool, write, response head, each body read).

A connection is reused only after a complete exchange: a request whose body failed to arrive, a
response not read to its end, a ``HEAD`` (its response framing is not parsed) or a ``Connection: close``
closes it. Request header names and values come from our own server's parser or from this hop, so
they cannot hold CR/LF.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import cast

import httptools

RawHeaders = list[tuple[bytes, bytes]]
_READ_BUFFER = 256 * 1024


class UpstreamError(Exception):
    """A failed upstream exchange; ``kind`` is the metric label (connect, pool, timeout, protocol, stream)."""

    kind = "protocol"


class ConnectFailed(UpstreamError):
    kind = "connect"


class PoolTimeout(UpstreamError):
    kind = "pool"


class UpstreamTimeout(UpstreamError):
    kind = "timeout"


class ProtocolFailed(UpstreamError):
    kind = "protocol"


class StreamFailed(UpstreamError):
    kind = "stream"


@dataclass(frozen=True, slots=True)
class Origin:
    host: str
    port: int
    tls: bool = False

    @property
    def host_header(self) -> bytes:
        return f"{self.host}:{self.port}".encode("idna")


class _Connection(asyncio.Protocol):
    """One upstream connection: writes a request, parses the response as it arrives."""

    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.idle_since = 0.0
        self._writable: asyncio.Event = asyncio.Event()
        self._writable.set()
        self._wakeup: asyncio.Event = asyncio.Event()
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.headers: RawHeaders = []
        self.head_done = False
        self.complete = False
        self.keep_alive = False
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.error: UpstreamError | None = None
        self._until_close = False  # a body without framing ends when the connection does
        self._reading_paused = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A TCP transport (uvloop's does not derive from asyncio.Transport, but has its methods).
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.head_done and self._until_close:
            self.complete, self.keep_alive = True, False
        if not self.complete and self.error is None:
            self.error = ProtocolFailed("the upstream closed the connection" + (f": {exc}" if exc else ""))
        self._writable.set()
        self._wakeup.set()

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.error = ProtocolFailed(f"malformed upstream response: {exc}")
            self.close()
        self._wakeup.set()

    def eof_received(self) -> bool:
        return False  # close our side as well

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    # httptools callbacks
    def on_message_begin(self) -> None:
        pass

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.keep_alive = self.parser.should_keep_alive()
        framed = any(k.lower() in (b"content-length", b"transfer-encoding") for k, _ in self.headers)
        self._until_close = not framed and self.status >= 200 and self.status not in (204, 304)
        self.head_done = True

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self.buffered += len(body)
        if self.buffered > _READ_BUFFER and self.transport is not None and not self._reading_paused:
            self._reading_paused = True
            self.transport.pause_reading()

    def on_message_complete(self) -> None:
        self.complete = True

    # used by the pool and the response
    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    async def drain(self, seconds: float) -> None:
        if not self._writable.is_set():
            try:
                await asyncio.wait_for(self._writable.wait(), seconds)
            except TimeoutError as exc:
                raise UpstreamTimeout("writing the request timed out") from exc
        if self.closed and not self.head_done:
            raise self.error or ProtocolFailed("the upstream closed the connection")

    async def wait(self, seconds: float) -> None:
        """Until something arrived (or the connection ended); :class:`UpstreamTimeout` after ``seconds``."""
        self._wakeup.clear()
        try:
            await asyncio.wait_for(self._wakeup.wait(), seconds)
        except TimeoutError as exc:
            raise UpstreamTimeout("no answer from the upstream in time") from exc

    def take(self) -> bytes:
        chunk = self.chunks.popleft() if len(self.chunks) == 1 else b"".join(self.chunks)
        self.chunks.clear()
        self.buffered = 0
        if self._reading_paused and self.transport is not None:
            self._reading_paused = False
            self.transport.resume_reading()
        return chunk


class UpstreamResponse:
    """An open response; the body is read with :meth:`aiter_raw`; :meth:`aclose` must always be called."""

    def __init__(self, pool: UpstreamPool, connection: _Connection, method: bytes) -> None:
        self._pool = pool
        self._connection: _Connection | None = connection
        self.status_code = connection.status
        self.raw_headers = connection.headers
        self._head_only = method == b"HEAD"

    def header(self, name: bytes) -> bytes | None:
        """The first value of header ``name`` (lower case), or None."""
        for key, value in self.raw_headers:
            if key.lower() == name:
                return value
        return None

    @property
    def complete(self) -> bool:
        """The whole body has arrived (reading it needs no more waiting)."""
        connection = self._connection
        return connection is None or self._head_only or connection.complete

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body as it arrives (de-chunked, not decoded); :class:`StreamFailed` if it breaks off."""
        connection = self._connection
        if connection is None or self._head_only:
            return
        while True:
            if connection.chunks:
                yield connection.take()
                continue
            if connection.complete:
                return
            if connection.error is not None:
                raise StreamFailed(str(connection.error))
            try:
                await connection.wait(self._pool.timeout)
            except UpstreamTimeout as exc:
                raise StreamFailed(str(exc)) from exc

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            reusable = connection.complete and connection.keep_alive and not self._head_only
            self._pool.release(connection, reusable=reusable)


class UpstreamPool:
    """Pooled connections to several origins; see the module doc for the bounds."""

    def __init__(self, *, timeout: float, max_connections: int, max_keepalive: int, keepalive_expiry: float) -> None:
        self.timeout = timeout
        self.max_connections = max_connections
        self.max_keepalive = max_keepalive
        self.keepalive_expiry = keepalive_expiry
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[Origin, list[_Connection]] = {}
        self._open = 0
        self._tls = ssl.create_default_context()

    async def aclose(self) -> None:
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()

    async def request(
        self,
        origin: Origin,
        method: bytes,
        target: bytes,
        headers: RawHeaders,
        body: bytes | AsyncIterator[bytes] | None,
    ) -> UpstreamResponse:
        """Send one request and wait for the response head; the caller must ``aclose()`` the result."""
        try:
            await asyncio.wait_for(self._slots.acquire(), self.timeout)
        except TimeoutError as exc:
            raise PoolTimeout("no upstream connection free in time") from exc
        connection: _Connection | None = None
        try:
            connection = await self._connection(origin)
            await self._send(connection, method, target, headers, body)
            while not connection.head_done:
                if connection.error is not None:
                    raise connection.error
                await connection.wait(self.timeout)
            return UpstreamResponse(self, connection, method)
        except BaseException:
            if connection is not None:
                self.release(connection, reusable=False)
            else:
                self._slots.release()
            raise

    def release(self, connection: _Connection, *, reusable: bool) -> None:
        """Back to the pool (only after a complete exchange) or closed; frees the request slot."""
        self._slots.release()
        idle = self._idle.setdefault(connection.origin, [])
        if reusable and not connection.closed and len(idle) < self.max_keepalive:
            connection._reset()
            connection.idle_since = time.monotonic()
            idle.append(connection)
            return
        self._close(connection)

    def _close(self, connection: _Connection) -> None:
        connection.close()
        self._open -= 1

    async def _connection(self, origin: Origin) -> _Connection:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if not connection.closed and now - connection.idle_since < self.keepalive_expiry:
                return connection
            self._close(connection)
        if self._open >= self.max_connections:
            self._evict_idle()
        loop = asyncio.get_running_loop()
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(
                    lambda: _Connection(origin), origin.host, origin.port, ssl=self._tls if origin.tls else None
                ),
                self.timeout,
            )
        except TimeoutError as exc:
            raise ConnectFailed(f"connecting to {origin.host}:{origin.port} timed out") from exc
        except OSError as exc:
            raise ConnectFailed(f"cannot connect to {origin.host}:{origin.port}: {exc}") from exc
        self._open += 1
        return connection

    def _evict_idle(self) -> None:
        """Room for a new connection: close the longest-idle connection of any origin."""
        candidates = [(c.idle_since, origin) for origin, idle in self._idle.items() for c in idle[:1]]
        if candidates:
            _, origin = min(candidates, key=lambda item: item[0])
            self._close(self._idle[origin].pop(0))

    async def _send(
        self,
        connection: _Connection,
        method: bytes,
        target: bytes,
        headers: RawHeaders,
        body: bytes | AsyncIterator[bytes] | None,
    ) -> None:
        transport = connection.transport
        assert transport is not None
        chunked = (
            body is not None and not isinstance(body, bytes) and not any(k == b"content-length" for k, _ in headers)
        )
        lines = [method, b" ", target, b" HTTP/1.1\r\nhost: ", connection.origin.host_header, b"\r\n"]
        for key, value in headers:
            lines += (key, b": ", value, b"\r\n")
        if isinstance(body, bytes) and not any(k == b"content-length" for k, _ in headers):
            lines += (b"content-length: ", str(len(body)).encode(), b"\r\n")
        if chunked:
            lines.append(b"transfer-encoding: chunked\r\n")
        lines.append(b"\r\n")
        if isinstance(body, bytes):
            lines.append(body)
        transport.write(b"".join(lines))
        if body is None or isinstance(body, bytes):
            await connection.drain(self.timeout)
            return
        async for chunk in body:
            if not chunk:
                continue
            transport.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
            await connection.drain(self.timeout)
        if chunked:
            transport.write(b"0\r\n\r\n")
        await connection.drain(self.timeout)
