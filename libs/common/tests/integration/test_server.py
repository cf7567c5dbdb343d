"""The services' HTTP protocol (common.server) on a real loopback socket: bounded heads, JSON refusals.

Raw sockets, because an HTTP client library would refuse to send most of these requests.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from common.server import HttpLimits, edge_protocol
from devstack.testing import serve_app

LIMITS = HttpLimits(max_header_count=50, max_header_bytes=8 * 1024, max_target_bytes=2 * 1024)


async def echo(request: Request) -> JSONResponse:
    body = await request.body()
    return JSONResponse({"headers": len(request.headers), "query": len(request.url.query), "body": len(body)})


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, int]]:
    app = Starlette(routes=[Route("/echo", echo, methods=["GET", "POST"])])
    async with serve_app(app, http=edge_protocol(LIMITS)) as url:
        host, port = url.removeprefix("http://").split(":")
        yield host, int(port)


async def exchange(server: tuple[str, int], request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes, read the whole answer (every refusal closes the connection)."""
    reader, writer = await asyncio.open_connection(*server)
    try:
        writer.write(request)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines if line)}
        body = await reader.readexactly(int(headers["content-length"]))
    finally:
        writer.close()
    return int(status_line.split()[1]), headers, body


def get(target: str = "/echo", headers: list[tuple[str, str]] | None = None) -> bytes:
    lines = [f"GET {target} HTTP/1.1", "Host: t", *(f"{k}: {v}" for k, v in headers or [])]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def assert_json_error(status: int, headers: dict[str, str], body: bytes, expected: int, code: str) -> None:
    assert status == expected
    assert headers["content-type"] == "application/json"
    payload = json.loads(body)
    assert set(payload) == {"code", "message"} and payload["code"] == code and payload["message"]


async def test_a_normal_request_is_served(server: tuple[str, int]) -> None:
    status, _, body = await exchange(server, get(headers=[(f"x-h{i}", "v") for i in range(40)]))
    assert status == 200 and json.loads(body)["headers"] == 41


async def test_too_many_headers_are_refused_with_431(server: tuple[str, int]) -> None:
    request = get(headers=[(f"x-h{i}", "v") for i in range(12_000)])
    assert_json_error(*await exchange(server, request), 431, "headers-too-large")


async def test_headers_over_the_total_size_are_refused(server: tuple[str, int]) -> None:
    request = get(headers=[("x-a", "a" * 5000), ("x-b", "b" * 5000)])
    assert_json_error(*await exchange(server, request), 431, "headers-too-large")


async def test_one_huge_header_is_refused_before_it_is_read_whole(server: tuple[str, int]) -> None:
    # 16 MiB never complete: the answer comes while most of it is still unsent.
    reader, writer = await asyncio.open_connection(*server)
    try:
        writer.write(b"GET /echo HTTP/1.1\r\nHost: t\r\nX-Big: ")
        chunk = b"x" * 65536
        answer = asyncio.ensure_future(reader.read(4096))
        for _ in range(256):
            if answer.done():
                break
            writer.write(chunk)
            try:
                await writer.drain()
            except ConnectionError:
                break
        first = await answer
    finally:
        writer.close()
    assert first.startswith(b"HTTP/1.1 431 ")
    assert b'"code": "headers-too-large"' in first


async def test_a_long_query_string_is_refused_with_414(server: tuple[str, int]) -> None:
    assert_json_error(*await exchange(server, get("/echo?q=" + "a" * 70_000)), 414, "uri-too-long")


async def test_a_query_within_the_limit_is_served(server: tuple[str, int]) -> None:
    status, _, body = await exchange(server, get("/echo?q=" + "a" * 1500))
    assert status == 200 and json.loads(body)["query"] == 1502


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 12abc\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        b"GET /echo HTTP/1.1 extra\r\nHost: t\r\n\r\n",
        b"NOT A REQUEST LINE\r\n\r\n",
        b"GET /echo HTTP/1.1\r\nBad Header Name: x\r\n\r\n",
    ],
    ids=["malformed-content-length", "conflicting-content-length", "bad-request-line", "garbage", "bad-header"],
)
async def test_malformed_requests_get_json_400(server: tuple[str, int], request_bytes: bytes) -> None:
    assert_json_error(*await exchange(server, request_bytes), 400, "invalid-request")


async def test_keep_alive_requests_each_get_their_own_head_budget(server: tuple[str, int]) -> None:
    reader, writer = await asyncio.open_connection(*server)
    try:
        one = get(headers=[(f"x-h{i}", "v" * 100) for i in range(45)])
        for _ in range(5):
            writer.write(one)
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 ")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
            await reader.readexactly(length)
    finally:
        writer.close()
