"""The proxy's pooled HTTP/1.1 client against a scripted loopback server, on asyncio's loop and on
uvloop (the loop ``python -m gateway`` runs on)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import uvloop

from gateway.upstream import (
    ConnectFailed,
    Origin,
    PoolTimeout,
    StreamFailed,
    UpstreamPool,
    UpstreamTimeout,
)

Handler = Callable[[bytes], bytes | None]  # request head + body -> raw response (None: keep silent)


class Server:
    """Reads one request per loop iteration (head, then Content-Length or chunked body) and answers."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests: list[bytes] = []
        self.close_after_answer = False

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                body = await self._body(reader, head)
                self.requests.append(head + body)
                answer = self.handler(head + body)
                if answer is None:
                    await asyncio.sleep(3600)
                writer.write(answer)  # type: ignore[arg-type]
                await writer.drain()
                if self.close_after_answer or b"connection: close" in answer.lower():  # type: ignore[union-attr]
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @staticmethod
    async def _body(reader: asyncio.StreamReader, head: bytes) -> bytes:
        lowered = head.lower()
        if b"content-length:" in lowered:
            length = int(lowered.split(b"content-length:")[1].split(b"\r\n")[0])
            return await reader.readexactly(length)
        if b"transfer-encoding: chunked" in lowered:
            body = b""
            while True:
                size = int((await reader.readuntil(b"\r\n")).strip(), 16)
                chunk = await reader.readexactly(size + 2)
                if size == 0:
                    return body
                body += chunk[:-2]
        return b""


def ok(body: bytes = b'{"ok": true}', extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n%s\r\n%s" % (len(body), extra, body)


def run(loop_kind: str, scenario: Callable[[], Awaitable[None]]) -> None:
    if loop_kind == "uvloop":
        uvloop.run(scenario())
    else:
        asyncio.run(scenario())


async def started(server: Server) -> tuple[asyncio.Server, Origin]:
    listener = await asyncio.start_server(server.serve, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    return listener, Origin("127.0.0.1", port)


def pool(**overrides: Any) -> UpstreamPool:
    options: dict[str, Any] = {"timeout": 2.0, "max_connections": 10, "max_keepalive": 5, "keepalive_expiry": 4.0}
    return UpstreamPool(**{**options, **overrides})


async def read_all(response: Any) -> bytes:
    try:
        return b"".join([chunk async for chunk in response.aiter_raw()])
    finally:
        await response.aclose()


LOOPS = pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])


@LOOPS
def test_connections_are_reused_and_headers_and_bodies_pass(loop_kind: str) -> None:
    async def scenario() -> None:
        server = Server(lambda request: ok(b"hello", b"x-up: 1\r\n"))
        listener, origin = await started(server)
        client = pool()
        for _ in range(3):
            response = await client.request(origin, b"PUT", b"/v1/x?a=1", [(b"content-type", b"text/plain")], b"abc")
            assert response.status_code == 200 and response.header(b"x-up") == b"1"
            assert await read_all(response) == b"hello"
        assert server.connections == 1
        assert server.requests[0].startswith(b"PUT /v1/x?a=1 HTTP/1.1\r\nhost: 127.0.0.1:")
        assert server.requests[0].endswith(b"content-length: 3\r\n\r\nabc")
        await client.aclose()
        listener.close()

    run(loop_kind, scenario)


@LOOPS
def test_a_streamed_body_without_length_goes_chunked_and_a_chunked_answer_is_dechunked(loop_kind: str) -> None:
    async def scenario() -> None:
        answer = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
        server = Server(lambda request: answer)
        listener, origin = await started(server)
        client = pool()

        async def body() -> Any:
            yield b"part1-"
            yield b""
            yield b"part2"

        response = await client.request(origin, b"POST", b"/", [], body())
        assert await read_all(response) == b"abcde"
        assert b"transfer-encoding: chunked" in server.requests[0]
        assert server.requests[0].endswith(b"part1-part2")
        await client.aclose()
        listener.close()

    run(loop_kind, scenario)


@LOOPS
def test_closed_unread_and_head_connections_are_not_reused(loop_kind: str) -> None:
    async def scenario() -> None:
        def answer(request: bytes) -> bytes:
            if b"/partial" in request:  # 10 of 20 bytes now, the rest never
                return b"HTTP/1.1 200 OK\r\ncontent-length: 20\r\n\r\n" + b"x" * 10
            return ok(b"x" * 10, b"connection: close\r\n" if b"/close" in request else b"")

        server = Server(answer)
        listener, origin = await started(server)
        client = pool()
        await read_all(await client.request(origin, b"GET", b"/close", [], None))
        await read_all(await client.request(origin, b"HEAD", b"/", [], None))
        unread = await client.request(origin, b"GET", b"/partial", [], None)
        await unread.aclose()  # closed before the end of its body
        await read_all(await client.request(origin, b"GET", b"/", [], None))
        await read_all(await client.request(origin, b"GET", b"/", [], None))
        assert server.connections == 4
        await client.aclose()
        listener.close()

    run(loop_kind, scenario)


@LOOPS
def test_a_connection_the_upstream_closed_while_idle_is_replaced(loop_kind: str) -> None:
    async def scenario() -> None:
        server = Server(lambda request: ok())
        server.close_after_answer = True  # a keep-alive answer, then the upstream closes (its idle timeout)
        listener, origin = await started(server)
        client = pool()
        await read_all(await client.request(origin, b"GET", b"/", [], None))
        await asyncio.sleep(0.1)  # the close reaches the pooled connection through the loop
        await read_all(await client.request(origin, b"GET", b"/", [], None))
        assert server.connections == 2
        await client.aclose()
        listener.close()

    run(loop_kind, scenario)


@LOOPS
def test_failures_are_classified(loop_kind: str) -> None:
    async def scenario() -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            closed_port = sock.getsockname()[1]
        client = pool(timeout=0.3, max_connections=1)
        with pytest.raises(ConnectFailed):
            await client.request(Origin("127.0.0.1", closed_port), b"GET", b"/", [], None)

        silent = Server(lambda request: None)
        listener, origin = await started(silent)
        with pytest.raises(UpstreamTimeout):
            await client.request(origin, b"GET", b"/", [], None)

        half = Server(lambda request: b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort")
        listener2, origin2 = await started(half)
        response = await client.request(origin2, b"GET", b"/", [], None)
        with pytest.raises(StreamFailed):
            await read_all(response)

        busy = await client.request(origin2, b"GET", b"/", [], None)  # holds the only slot
        with pytest.raises(PoolTimeout):
            await client.request(origin2, b"GET", b"/", [], None)
        await busy.aclose()
        await client.aclose()
        listener.close()
        listener2.close()

    run(loop_kind, scenario)


@LOOPS
def test_a_request_body_that_fails_releases_the_slot_and_the_connection(loop_kind: str) -> None:
    async def scenario() -> None:
        server = Server(lambda request: ok())
        listener, origin = await started(server)
        client = pool(max_connections=1)

        async def broken() -> Any:
            yield b"some"
            raise RuntimeError("client went away")

        with pytest.raises(RuntimeError):
            await client.request(origin, b"POST", b"/", [(b"content-length", b"100")], broken())
        assert await read_all(await client.request(origin, b"GET", b"/", [], None)) == b'{"ok": true}'
        assert server.connections == 2
        await client.aclose()
        listener.close()

    run(loop_kind, scenario)
