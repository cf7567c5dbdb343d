"""The services' HTTP protocol (common.server) on a real loopback socket: bounded heads, JSON refusals.

Raw sockets, because an HTTP client library would refuse to send most of these requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
from collections.abc import AsyncIterator

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from common.metrics import SERVER_REFUSAL_REASONS, SERVER_REFUSALS
from common.server import HttpLimits, QuietServer, edge_protocol, edge_websocket_protocol
from devstack.testing import free_port, raw_exchange, raw_request, send_endless_header, serve_app

LIMITS = HttpLimits(max_header_count=50, max_header_bytes=8 * 1024, max_target_bytes=2 * 1024)


async def echo(request: Request) -> JSONResponse:
    body = await request.body()
    return JSONResponse({"headers": len(request.headers), "query": len(request.url.query), "body": len(body)})


SERVICE = "server-test"


async def socket(websocket: WebSocket) -> None:
    await websocket.accept()
    await websocket.send_text("hello")
    await websocket.close()


@pytest.fixture
async def server() -> AsyncIterator[str]:
    app = Starlette(routes=[Route("/echo", echo, methods=["GET", "POST"]), WebSocketRoute("/ws", socket)])
    async with serve_app(app, http=edge_protocol(LIMITS, SERVICE), ws=edge_websocket_protocol(SERVICE)) as url:
        yield url


def refusals(reason: str) -> float:
    return SERVER_REFUSALS.labels(SERVICE, reason)._value.get()


def get(target: str = "/echo", headers: list[tuple[str, str]] | None = None) -> bytes:
    return raw_request(target, headers or [])


def assert_json_error(status: int, headers: dict[str, str], body: bytes, expected: int, code: str) -> None:
    assert status == expected
    assert headers["content-type"] == "application/json"
    payload = json.loads(body)
    assert set(payload) == {"code", "message"} and payload["code"] == code and payload["message"]
    assert re.fullmatch(r"[0-9a-f]{32}", headers["x-request-id"])  # every answer has one, refusals too


async def test_a_normal_request_is_served(server: str) -> None:
    status, _, body = await raw_exchange(server, get(headers=[(f"x-h{i}", "v") for i in range(40)]))
    assert status == 200 and json.loads(body)["headers"] == 41


async def test_too_many_headers_are_refused_with_431(server: str) -> None:
    request = get(headers=[(f"x-h{i}", "v") for i in range(12_000)])
    assert_json_error(*await raw_exchange(server, request), 431, "headers-too-large")


async def test_headers_over_the_total_size_are_refused(server: str) -> None:
    request = get(headers=[("x-a", "a" * 5000), ("x-b", "b" * 5000)])
    assert_json_error(*await raw_exchange(server, request), 431, "headers-too-large")


async def test_one_huge_header_is_refused_before_it_is_read_whole(server: str) -> None:
    # 16 MiB never complete: the answer comes while most of it is still unsent.
    first = await send_endless_header(server, "/echo")
    assert first.startswith(b"HTTP/1.1 431 ")
    assert b'"code": "headers-too-large"' in first


async def test_a_long_query_string_is_refused_with_414(server: str) -> None:
    assert_json_error(*await raw_exchange(server, get("/echo?q=" + "a" * 70_000)), 414, "uri-too-long")


async def test_a_query_within_the_limit_is_served(server: str) -> None:
    status, _, body = await raw_exchange(server, get("/echo?q=" + "a" * 1500))
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
async def test_malformed_requests_get_json_400(server: str, request_bytes: bytes) -> None:
    assert_json_error(*await raw_exchange(server, request_bytes), 400, "invalid-request")


async def test_keep_alive_requests_each_get_their_own_head_budget(server: str) -> None:
    host, port = server.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        one = get(headers=[(f"x-h{i}", "v" * 100) for i in range(45)])
        for _ in range(5):
            writer.write(one)
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 ")
            length = next(
                int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
            )
            await reader.readexactly(length)
    finally:
        writer.close()


class CountingServer(QuietServer):
    ticks = 0

    async def on_tick(self, counter: int) -> bool:
        self.ticks += 1
        return await super().on_tick(counter)


async def test_the_server_ticks_once_a_second_keeps_the_date_header_and_stops_at_once_on_a_signal() -> None:
    app = Starlette(routes=[Route("/echo", echo, methods=["GET", "POST"])])
    port = free_port()
    server = CountingServer(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False))
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.02)
    ticks_at_start = server.ticks
    await asyncio.sleep(2.5)
    status, headers, _ = await raw_exchange(f"http://127.0.0.1:{port}", get())
    assert status == 200 and headers["date"].endswith(" GMT")
    assert server.ticks - ticks_at_start <= 4  # uvicorn's own loop ticks 25 times in 2.5 s

    server.handle_exit(signal.SIGTERM, None)
    await asyncio.wait_for(task, timeout=10)
    assert server.ticks - ticks_at_start <= 5  # the signal ended the wait: no tick in between


async def test_a_started_server_has_frozen_its_start_up_heap() -> None:
    """Full collections must not walk what start-up loaded (common.server.freeze_startup_heap)."""
    import gc

    gc.unfreeze()
    app = Starlette(routes=[Route("/echo", echo, methods=["GET", "POST"])])
    server = QuietServer(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_config=None, access_log=False))
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.1)  # the main loop has begun
        assert gc.get_freeze_count() > 0
    finally:
        server.handle_exit(signal.SIGTERM, None)
        await asyncio.wait_for(task, timeout=10)
        gc.unfreeze()  # the test process's heap goes back to the collector


WS_HEADERS = [
    ("Upgrade", "websocket"),
    ("Connection", "Upgrade"),
    ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ("Sec-WebSocket-Version", "13"),
]


def upgrade(replace: dict[str, str | None], method: str = "GET") -> bytes:
    headers = [(k, replace.get(k, v)) for k, v in WS_HEADERS]
    lines = "".join(f"{k}: {v}\r\n" for k, v in headers if v is not None)
    return f"{method} /ws HTTP/1.1\r\nHost: t\r\n{lines}\r\n".encode()


async def test_a_valid_websocket_handshake_is_accepted(server: str) -> None:
    host, port = server.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(upgrade({}))
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101 ")
    finally:
        writer.close()


@pytest.mark.parametrize(
    ("replace", "named"),
    [
        ({"Sec-WebSocket-Version": "8"}, "Sec-WebSocket-Version"),
        ({"Sec-WebSocket-Key": "not-base64!"}, "Sec-WebSocket-Key"),
        ({"Sec-WebSocket-Key": None}, "Sec-WebSocket-Key"),
    ],
    ids=["bad-version", "bad-key", "missing-key"],
)
async def test_a_handshake_the_websocket_library_refuses_gets_json_400_and_is_counted(
    server: str, replace: dict[str, str | None], named: str
) -> None:
    before = refusals("websocket-handshake")
    status, headers, body = await raw_exchange(server, upgrade(replace))
    assert_json_error(status, headers, body, 400, "invalid-websocket-handshake")
    assert named in json.loads(body)["message"]
    assert "not-base64" not in body.decode()  # the client's value is not echoed
    assert refusals("websocket-handshake") == before + 1


async def test_a_handshake_with_another_method_gets_json_405(server: str) -> None:
    status, headers, body = await raw_exchange(server, upgrade({}, method="POST"))
    assert_json_error(status, headers, body, 405, "invalid-websocket-handshake")


async def test_server_layer_refusals_are_counted_by_reason(server: str) -> None:
    assert all(SERVER_REFUSALS.labels(SERVICE, reason)._value.get() >= 0 for reason in SERVER_REFUSAL_REASONS)
    cases = [
        (get(headers=[(f"x-h{i}", "v") for i in range(60)]), "headers-too-large"),
        (get("/echo?q=" + "a" * 3000), "uri-too-long"),
        (b"NOT A REQUEST LINE\r\n\r\n", "malformed-request"),
    ]
    for request, reason in cases:
        before = {r: refusals(r) for r in SERVER_REFUSAL_REASONS}
        await raw_exchange(server, request)
        after = {r: refusals(r) for r in SERVER_REFUSAL_REASONS}
        assert after == {**before, reason: before[reason] + 1}, reason


def test_every_refusal_reason_exists_at_zero_once_the_options_are_built() -> None:
    from prometheus_client import REGISTRY

    from common.server import server_options
    from common.settings import CommonSettings

    server_options(CommonSettings(), "fresh-service")
    for reason in SERVER_REFUSAL_REASONS:
        value = REGISTRY.get_sample_value("http_server_refusals_total", {"service": "fresh-service", "reason": reason})
        assert value == 0.0, reason
