"""common.server builds on uvicorn internals: EdgeHttpProtocol overrides and calls private methods of
uvicorn's httptools protocol, QuietServer replaces uvicorn.Server's main loop. uvicorn is pinned to a
tested minor version; this test fails when an upgrade renames one of those methods, changes its
parameters, or stops calling it, so the override would silently stop applying."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

import pytest
import uvicorn
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from common.server import EdgeHttpProtocol, HttpLimits, QuietServer, edge_protocol

# uvicorn method -> the parameters our override (or call) relies on.
PROTOCOL_METHODS: dict[str, list[str]] = {
    "data_received": ["self", "data"],
    "send_400_response": ["self", "msg"],
    "on_message_begin": ["self"],
    "on_url": ["self", "url"],
    "on_header": ["self", "name", "value"],
    "on_headers_complete": ["self"],
    "_unset_keepalive_if_required": ["self"],
    "_should_upgrade": ["self"],
    "handle_websocket_upgrade": ["self"],
    "_unsupported_upgrade_warning": ["self"],
}
SERVER_METHODS: dict[str, list[str]] = {
    "main_loop": ["self"],
    "on_tick": ["self", "counter"],
    "handle_exit": ["self", "sig", "frame"],
}


def parameters(function: Callable[..., Any]) -> list[str]:
    return list(inspect.signature(function).parameters)


@pytest.mark.parametrize(("name", "expected"), PROTOCOL_METHODS.items())
def test_the_protocol_methods_we_override_or_call_exist_with_their_parameters(name: str, expected: list[str]) -> None:
    assert parameters(getattr(HttpToolsProtocol, name)) == expected
    if name in vars(EdgeHttpProtocol):
        assert parameters(vars(EdgeHttpProtocol)[name]) == expected


@pytest.mark.parametrize(("name", "expected"), SERVER_METHODS.items())
def test_the_server_methods_we_override_or_call_exist_with_their_parameters(name: str, expected: list[str]) -> None:
    assert parameters(getattr(uvicorn.Server, name)) == expected
    assert inspect.iscoroutinefunction(getattr(uvicorn.Server, name)) == inspect.iscoroutinefunction(
        getattr(QuietServer, name)
    )


def test_the_server_still_runs_its_main_loop_and_ticks_through_on_tick() -> None:
    assert "await self.main_loop()" in inspect.getsource(uvicorn.Server._serve)
    assert "await self.on_tick(" in inspect.getsource(uvicorn.Server.main_loop)


class Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def is_closing(self) -> bool:
        return self.closing

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        pass

    def close(self) -> None:
        self.closing = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name, default)


async def app(scope: Any, receive: Any, send: Any) -> None:  # never reached by a refused request
    raise AssertionError("the app saw a request the protocol should have refused")


def connected(limits: HttpLimits) -> tuple[EdgeHttpProtocol, Transport]:
    protocol = edge_protocol(limits)(config=Config(app), server_state=ServerState(), app_state={})
    transport = Transport()
    protocol.connection_made(transport)
    return protocol, transport


async def test_the_parser_calls_our_header_callback_and_our_refusal_answers() -> None:
    protocol, transport = connected(HttpLimits(max_header_count=3))
    head = b"GET / HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: y\r\n" % n for n in range(5)) + b"\r\n"
    protocol.data_received(head)
    assert transport.written.startswith(b"HTTP/1.1 431 ")
    assert b'"code":"headers-too-large"' in transport.written.replace(b" ", b"")


async def test_a_long_target_is_refused_through_our_url_callback() -> None:
    protocol, transport = connected(HttpLimits(max_target_bytes=16))
    protocol.data_received(b"GET /" + b"a" * 64 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert transport.written.startswith(b"HTTP/1.1 414 ")


async def test_uvicorns_own_400_goes_through_our_json_answer() -> None:
    protocol, transport = connected(HttpLimits())
    protocol.data_received(b"GET / HTTP/1.1\r\nContent-Length: nope\r\n\r\n")
    assert transport.written.startswith(b"HTTP/1.1 400 ")
    assert b"application/json" in transport.written
