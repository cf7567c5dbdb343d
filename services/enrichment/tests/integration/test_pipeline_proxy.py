"""The browser's filtering proxy: checked, pinned connections only (docs/api-guide.md, section 6)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from enrichment.fetch import FetchError
from enrichment.pipeline.proxy import FilteringProxy


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = f"path={self.path} host={self.headers.get('Host')} conn={self.headers.get('Connection')}".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Keep-Alive", "timeout=5")
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _only(origin: str) -> object:
    async def checker(url: str) -> None:
        if f"//{origin}/" not in url and not url.endswith(f"//{origin}"):
            raise FetchError("blocked-host", f"{url} is not the test origin")

    return checker


@pytest.fixture
async def proxy(origin: str) -> AsyncIterator[tuple[FilteringProxy, list[str]]]:
    blocked: list[str] = []
    proxy = FilteringProxy(
        allow_private_networks=True,
        connect_timeout_seconds=5,
        on_blocked=blocked.append,
        url_checker=_only(origin),  # type: ignore[arg-type]
    )
    await proxy.start()
    yield proxy, blocked
    await proxy.close()


async def _exchange(proxy_url: str, request: bytes) -> bytes:
    host, port = proxy_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(request)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return data


async def test_plain_http_is_forwarded_one_request_per_connection(
    proxy: tuple[FilteringProxy, list[str]], origin: str
) -> None:
    server, blocked = proxy
    request = (
        f"GET http://{origin}/hello?x=1 HTTP/1.1\r\nHost: {origin}\r\nProxy-Connection: keep-alive\r\n\r\n"
    ).encode()
    response = await _exchange(server.url, request)
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert b"Connection: close" in head
    assert b"keep-alive" not in head.lower()
    assert body == f"path=/hello?x=1 host={origin} conn=close".encode()
    assert blocked == []


async def test_plain_http_to_a_blocked_host_is_refused(proxy: tuple[FilteringProxy, list[str]]) -> None:
    server, blocked = proxy
    response = await _exchange(server.url, b"GET http://169.254.169.254/latest/ HTTP/1.1\r\nHost: x\r\n\r\n")
    assert response.startswith(b"HTTP/1.1 403")
    assert blocked == ["http://169.254.169.254/latest/"]


async def test_connect_tunnel_to_the_allowed_origin(proxy: tuple[FilteringProxy, list[str]], origin: str) -> None:
    server, blocked = proxy
    host, port = server.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"CONNECT {origin} HTTP/1.1\r\nHost: {origin}\r\n\r\n".encode())
    assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
    # Inside the tunnel the bytes go to the origin untouched (keep-alive stays the client's business).
    writer.write(f"GET /tunnel HTTP/1.1\r\nHost: {origin}\r\nConnection: close\r\n\r\n".encode())
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    assert data.startswith(b"HTTP/1.1 200")
    assert data.endswith(f"path=/tunnel host={origin} conn=close".encode())
    assert blocked == []


async def test_connect_to_a_blocked_host_is_refused(proxy: tuple[FilteringProxy, list[str]]) -> None:
    server, blocked = proxy
    response = await _exchange(server.url, b"CONNECT 10.255.255.1:443 HTTP/1.1\r\nHost: 10.255.255.1:443\r\n\r\n")
    assert response.startswith(b"HTTP/1.1 403")
    assert blocked == ["https://10.255.255.1:443/"]


async def test_address_policy_blocks_resolved_private_addresses() -> None:
    blocked: list[str] = []

    async def rebinding_resolver(host: str, port: int) -> list[str]:
        return ["93.184.215.14", "127.0.0.1"]  # one public, one loopback: the whole name is refused

    proxy = FilteringProxy(
        allow_private_networks=False,
        connect_timeout_seconds=5,
        on_blocked=blocked.append,
        resolver=rebinding_resolver,
    )
    await proxy.start()
    try:
        response = await _exchange(proxy.url, b"CONNECT rebind.example:443 HTTP/1.1\r\nHost: x\r\n\r\n")
        literal = await _exchange(proxy.url, b"GET http://[::ffff:127.0.0.1]:80/ HTTP/1.1\r\nHost: x\r\n\r\n")
    finally:
        await proxy.close()
    assert response.startswith(b"HTTP/1.1 403")
    assert literal.startswith(b"HTTP/1.1 403")
    assert blocked == ["https://rebind.example:443/", "http://[::ffff:127.0.0.1]:80/"]


@pytest.mark.parametrize(
    "request_bytes",
    [b"NONSENSE\r\n\r\n", b"CONNECT no-port HTTP/1.1\r\n\r\n", b"GET ftp://example.com/ HTTP/1.1\r\n\r\n"],
)
async def test_malformed_requests_are_rejected(proxy: tuple[FilteringProxy, list[str]], request_bytes: bytes) -> None:
    server, _ = proxy
    assert (await _exchange(server.url, request_bytes)).startswith(b"HTTP/1.1 400")
