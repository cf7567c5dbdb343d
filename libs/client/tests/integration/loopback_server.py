"""The in-memory fake service (client_fakes) over real HTTP and WebSocket, for CLI processes.

A CLI process cannot be handed an in-process transport, so :class:`Loopback` serves
``FakeServer.handle`` and a ``/v1/events`` WebSocket with uvicorn on a loopback port, in a thread of
the test process. :class:`Hold` points let a test stop the server at a chosen step (a held
WebSocket handshake: the client is connecting; a held delta request: the client is syncing; a held
refresh: the client is renewing its session) and see that the client has reached it, so a signal can
be sent in that exact state.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import uvicorn
from client_fakes import FakeServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

_POLL_SECONDS = 0.02


class Hold:
    """A step the server stops at while ``enabled``; ``reached`` tells the test a request got there."""

    def __init__(self) -> None:
        self.enabled = threading.Event()
        self.reached = threading.Event()

    async def pause(self, closing: threading.Event) -> None:
        if not self.enabled.is_set():
            return
        self.reached.set()
        while self.enabled.is_set() and not closing.is_set():
            await asyncio.sleep(_POLL_SECONDS)


class Loopback:
    def __init__(self) -> None:
        self.fake = FakeServer()
        self.handshake = Hold()
        self.delta = Hold()
        self.refresh = Hold()
        self.deltas_served = 0
        self.sockets_opened = 0
        self.sockets_closed_by_server = 0
        # Set: each socket is closed by the server right after it opens (the client backs off, retries).
        self.drop_sockets = threading.Event()
        self._closing = threading.Event()
        self.url = ""

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                WebSocketRoute("/v1/events", self._events),
                Route("/{path:path}", self._http, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
            ]
        )

    async def _http(self, request: Request) -> Response:
        body = await request.body()  # before a hold: a client that goes away meanwhile has sent it already
        hold = {"/v1/bookmarks/delta": self.delta, "/v1/auth/refresh": self.refresh}.get(request.url.path)
        if hold is not None:
            await hold.pause(self._closing)
        reply = await self.fake.handle(
            httpx.Request(request.method, str(request.url), headers=request.headers.raw, content=body)
        )
        if request.url.path == "/v1/bookmarks/delta":
            self.deltas_served += 1
        content = await reply.aread()
        return Response(content, status_code=reply.status_code, media_type=reply.headers.get("content-type"))

    async def _events(self, ws: WebSocket) -> None:
        await self.handshake.pause(self._closing)
        if ws.query_params.get("access_token") not in self.fake.access:
            await ws.close()  # before accepting: the handshake is refused with 403, as the gateway does
            return
        await ws.accept()
        self.sockets_opened += 1
        if self.drop_sockets.is_set():
            self.sockets_closed_by_server += 1
            await ws.close(1011)
            return
        try:
            while not self._closing.is_set():
                await asyncio.wait_for(ws.receive_text(), timeout=0.5)
        except (TimeoutError, WebSocketDisconnect, RuntimeError):
            return

    @contextmanager
    def running(self) -> Iterator[Loopback]:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(self.app(), log_level="warning", lifespan="off", timeout_graceful_shutdown=2)
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="loopback", daemon=True)
        thread.start()
        try:
            while not server.started:
                if not thread.is_alive():
                    raise RuntimeError("the loopback server did not start")
                threading.Event().wait(_POLL_SECONDS)
            yield self
        finally:
            self._closing.set()
            server.should_exit = True
            thread.join(timeout=10)
            sock.close()
