"""A loopback HTTP proxy that is the headless browser's only way out (docs/api-guide.md, section 6).

Playwright's request routing sees the requests a page starts, but not redirect hops (by design, see
microsoft/playwright#3993), nor preconnects or WebSocket handshakes, and the browser resolves host names
itself after our check, which leaves a DNS-rebinding gap. Every connection the browser opens goes through
this proxy instead: it checks the target, resolves the name once, checks every address and connects to
exactly those addresses. A redirect to a metadata endpoint therefore fails like any other blocked request.

Plain-HTTP requests are forwarded one per connection ("Connection: close" both ways) so that a kept-alive
browser connection is never reused for a second, unchecked host. HTTPS and WebSockets use CONNECT tunnels,
which are bound to the one host:port that was checked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from ipaddress import ip_address
from typing import Final
from urllib.parse import urlsplit

from enrichment.fetch import (
    IPAddress,
    Resolver,
    default_resolver,
    is_blocked_address,
    parse_host_literal,
)

__all__ = ["FilteringProxy", "UrlChecker"]

logger = logging.getLogger(__name__)

UrlChecker = Callable[[str], Awaitable[None]]
"""Raises (normally :class:`FetchError`) when the browser must not request the URL."""

_HEAD_LIMIT: Final = 64 * 1024
_CHUNK: Final = 64 * 1024
_HOP_BY_HOP: Final = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "upgrade"})
_FORBIDDEN: Final = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_BAD_GATEWAY: Final = b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_BAD_REQUEST: Final = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class _Refused(Exception):
    def __init__(self, response: bytes) -> None:
        super().__init__()
        self.response = response


class FilteringProxy:
    """Forward proxy on 127.0.0.1 that only connects to checked, pinned addresses."""

    def __init__(
        self,
        *,
        allow_private_networks: bool,
        connect_timeout_seconds: float,
        on_blocked: Callable[[str], None],
        url_checker: UrlChecker | None = None,
        resolver: Resolver | None = None,
    ) -> None:
        self._allow_private_networks = allow_private_networks
        self._connect_timeout = connect_timeout_seconds
        self._on_blocked = on_blocked
        self._url_checker = url_checker
        self._resolver = resolver or default_resolver
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("proxy not started")
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, host="127.0.0.1", port=0, limit=_HEAD_LIMIT)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            await self._serve(reader, writer)
        except asyncio.CancelledError:
            # Only close() cancels connections. Ending quietly matters: asyncio's server callback calls
            # task.exception() on this task and would log a cancelled one as an error.
            pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        except Exception:
            logger.warning("browser proxy connection failed", exc_info=True)
        finally:
            if task is not None:
                self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self._connect_timeout)
        request_line, _, header_block = head.decode("latin-1").partition("\r\n")
        parts = request_line.split(" ")
        if len(parts) != 3:
            writer.write(_BAD_REQUEST)
            return
        method, target, version = parts
        try:
            if method.upper() == "CONNECT":
                upstream = await self._open_tunnel(target)
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                await _relay(reader, writer, *upstream)
            else:
                upstream, forwarded_head = await self._open_forward(method, target, version, header_block)
                upstream[1].write(forwarded_head)
                await _relay(reader, writer, *upstream, rewrite_response_head=True)
        except _Refused as refused:
            writer.write(refused.response)
            with contextlib.suppress(ConnectionError):
                await writer.drain()

    async def _open_tunnel(self, target: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        host, port = _split_authority(target)
        if host is None or port is None:
            raise _Refused(_BAD_REQUEST)
        scheme = "http" if port == 80 else "https"
        return await self._connect(f"{scheme}://{_url_host(host)}:{port}/", host, port)

    async def _open_forward(
        self, method: str, target: str, version: str, header_block: str
    ) -> tuple[tuple[asyncio.StreamReader, asyncio.StreamWriter], bytes]:
        try:
            parts = urlsplit(target)
            port = parts.port or 80
        except ValueError:
            raise _Refused(_BAD_REQUEST) from None
        if parts.scheme.lower() != "http" or not parts.hostname:
            raise _Refused(_BAD_REQUEST)
        upstream = await self._connect(target, parts.hostname, port)
        path = parts.path or "/"
        if parts.query:
            path = f"{path}?{parts.query}"
        headers = [
            line
            for line in header_block.split("\r\n")
            if line and line.split(":", 1)[0].strip().lower() not in _HOP_BY_HOP
        ]
        head = "\r\n".join([f"{method} {path} {version}", *headers, "Connection: close", "", ""])
        return upstream, head.encode("latin-1")

    async def _connect(self, url: str, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        addresses = await self._admit(url, host, port)
        last_error: OSError | None = None
        for address in addresses:
            try:
                return await asyncio.wait_for(
                    asyncio.open_connection(str(address), port, limit=_HEAD_LIMIT), self._connect_timeout
                )
            except (OSError, TimeoutError) as exc:
                last_error = exc if isinstance(exc, OSError) else OSError(str(exc))
        logger.debug("browser proxy could not connect to %s: %s", host, last_error)
        raise _Refused(_BAD_GATEWAY)

    async def _admit(self, url: str, host: str, port: int) -> list[IPAddress]:
        """The addresses this connection may use; every one of them was checked."""
        if self._url_checker is not None:
            try:
                await self._url_checker(url)
            except Exception:  # fail closed: a checker that breaks blocks
                self._refuse(url)
        literal = parse_host_literal(host)
        if literal is not None:
            addresses: list[IPAddress] = [literal]
        else:
            try:
                addresses = [ip_address(raw) for raw in await self._resolver(host, port)]
            except (OSError, UnicodeError, ValueError):
                raise _Refused(_BAD_GATEWAY) from None
        if not addresses:
            raise _Refused(_BAD_GATEWAY)
        if not self._allow_private_networks and any(is_blocked_address(address) for address in addresses):
            self._refuse(url)
        return addresses

    def _refuse(self, url: str) -> None:
        self._on_blocked(url)
        raise _Refused(_FORBIDDEN)


async def _relay(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream_writer: asyncio.StreamWriter,
    *,
    rewrite_response_head: bool = False,
) -> None:
    async def downstream() -> None:
        if rewrite_response_head:
            head = await upstream_reader.readuntil(b"\r\n\r\n")
            client_writer.write(_close_response_head(head))
        await _copy(upstream_reader, client_writer)

    directions = [asyncio.ensure_future(_copy(client_reader, upstream_writer)), asyncio.ensure_future(downstream())]
    try:
        # Browsers never half-close: when either side is finished, the exchange is over.
        await asyncio.wait(directions, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for direction in directions:
            direction.cancel()
        await asyncio.gather(*directions, return_exceptions=True)
        upstream_writer.close()
        with contextlib.suppress(Exception):
            await upstream_writer.wait_closed()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while chunk := await reader.read(_CHUNK):
        writer.write(chunk)
        await writer.drain()


def _close_response_head(head: bytes) -> bytes:
    """The response head with "Connection: close", so the browser never reuses this connection."""
    status_line, _, header_block = head.decode("latin-1").partition("\r\n")
    headers = [
        line
        for line in header_block.split("\r\n")
        if line and line.split(":", 1)[0].strip().lower() not in ("connection", "keep-alive", "proxy-connection")
    ]
    return "\r\n".join([status_line, *headers, "Connection: close", "", ""]).encode("latin-1")


def _split_authority(target: str) -> tuple[str | None, int | None]:
    """``example.com:443`` / ``[2001:db8::1]:443`` → host and port."""
    host, separator, port_text = target.rpartition(":")
    if not separator or not port_text.isdigit():
        return None, None
    port = int(port_text)
    if not 0 < port < 65536:
        return None, None
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    return (host or None), port


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
