"""Gateway test fixtures.

- ``tokens``: access tokens minted with a test key served as JWKS on loopback (the gateway's
  ``GATEWAY_JWKS_URL`` points at it), so tests control ``sub``, ``exp`` and ``jti``.
- ``stand_in``: a tiny upstream used only for proxy mechanics (echo, streaming, slow, hop-by-hop).
- ``start_gateway(**settings)``: a gateway app served on a real port against the broker of ``infra``,
  returned once ``/readyz`` says ready (event tail caught up, deny-list loaded).
- ``publish(event)``: an event produced to the real broker, keyed by user like the outbox relay does.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaProducer
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from common.events import Event, serialize_event
from common.outbox import create_producer
from common.server import server_options
from devstack.testing import LocalJwksServer, serve_app
from gateway.main import create_app
from gateway.settings import Settings
from gateway.state import Gateway

ISSUER = "gateway-test-issuer"
AUDIENCE = "gateway-test-audience"


@dataclass
class Tokens:
    server: LocalJwksServer

    def mint(self, user: uuid.UUID | None = None, *, expires_in: int = 600, **claims: Any) -> str:
        return self.server.mint(
            sub=str(user or uuid.uuid4()), claims={"jti": uuid.uuid4().hex, **claims}, expires_in=expires_in
        )


@pytest.fixture(scope="session")
def jwks_server() -> Any:
    server = LocalJwksServer(issuer=ISSUER, audience=AUDIENCE).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def tokens(jwks_server: LocalJwksServer) -> Tokens:
    return Tokens(jwks_server)


@dataclass
class StandIn:
    """A minimal upstream: what it received, and gates the test opens to pace its answers."""

    url: str = ""
    release_stream: asyncio.Event = field(default_factory=asyncio.Event)
    first_upload_chunk: asyncio.Event = field(default_factory=asyncio.Event)
    release_slow: asyncio.Event = field(default_factory=asyncio.Event)
    uploads: list[int] = field(default_factory=list)
    openapi: dict[str, Any] = field(default_factory=dict)

    def reset(self) -> None:
        self.release_stream = asyncio.Event()
        self.first_upload_chunk = asyncio.Event()
        self.uploads.clear()


def _stand_in_app(state: StandIn) -> Starlette:
    async def echo(request: Request) -> Response:
        body = await request.body()
        return JSONResponse(
            {
                "method": request.method,
                "path": request.url.path,
                "raw_path": request.scope["raw_path"].decode(),
                "query": request.url.query,
                "headers": [[k.decode(), v.decode()] for k, v in request.scope["headers"]],
                "body_length": len(body),
            }
        )

    async def hop(request: Request) -> Response:
        response = Response(b"teapot", status_code=418, media_type="text/plain")
        response.raw_headers += [
            (b"connection", b"x-upstream-hop"),
            (b"x-upstream-hop", b"secret"),
            (b"keep-alive", b"timeout=5"),
            (b"proxy-authenticate", b"Basic"),
            (b"x-end-to-end", b"kept"),
            (b"set-cookie", b"a=1; Path=/"),
            (b"set-cookie", b"b=2; Path=/"),
        ]
        return response

    async def stream(request: Request) -> Response:
        async def body() -> AsyncIterator[bytes]:
            yield b"first\n"
            await state.release_stream.wait()  # only the test, after reading "first", lets this go
            yield b"second\n"

        return StreamingResponse(body(), media_type="text/plain")

    async def upload(request: Request) -> Response:
        total = 0
        try:
            async for chunk in request.stream():
                total += len(chunk)
                if total:
                    state.first_upload_chunk.set()
        except ClientDisconnect:  # the gateway aborted the upload (over the limit)
            return Response(status_code=499)
        state.uploads.append(total)
        return JSONResponse({"received": total})

    async def slow(request: Request) -> Response:
        await state.release_slow.wait()
        return Response(b"late")

    async def openapi(request: Request) -> Response:
        return JSONResponse(state.openapi)

    async def no_content(request: Request) -> Response:
        return Response(status_code=204)

    async def redirect(request: Request) -> Response:
        # What an upstream's trailing-slash redirect looked like: its own internal address.
        target = request.query_params.get("to") or f"{state.url}/v1/bookmarks/delta?after=1"
        return Response(status_code=307, headers={"location": target})

    methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    return Starlette(
        routes=[
            Route("/v1/bookmarks/hop", hop, methods=methods),
            Route("/v1/bookmarks/stream", stream, methods=methods),
            Route("/v1/bookmarks/upload", upload, methods=methods),
            Route("/v1/enrichment/capture", upload, methods=methods),
            Route("/v1/bookmarks/slow", slow, methods=methods),
            Route("/v1/bookmarks/empty", no_content, methods=methods),
            Route("/v1/bookmarks/redirect", redirect, methods=methods),
            Route("/openapi.json", openapi),
            Route("/{path:path}", echo, methods=methods),
        ]
    )


@pytest.fixture(scope="session")
async def stand_in() -> AsyncIterator[StandIn]:
    state = StandIn()
    async with serve_app(_stand_in_app(state)) as url:
        state.url = url
        yield state
        state.release_slow.set()  # lets a hung request finish so the server can stop


@dataclass
class RunningGateway:
    url: str
    app: Any
    client: httpx.AsyncClient
    settings: Settings

    @property
    def state(self) -> Gateway:
        gateway: Gateway = self.app.state.gateway
        return gateway

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://") + "/v1/events"


async def wait_ready(client: httpx.AsyncClient, timeout: float = 60.0) -> None:
    async with asyncio.timeout(timeout):
        while True:
            try:
                if (await client.get("/readyz")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.05)


StartGateway = Callable[..., AbstractAsyncContextManager[RunningGateway]]


@pytest.fixture(scope="session")
def gateway_settings(infra: Any, jwks_server: LocalJwksServer, stand_in: StandIn) -> Callable[..., Settings]:
    """Every variable explicit, so the developer's environment cannot leak in."""

    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "kafka_bootstrap_servers": infra.kafka_bootstrap,
            "otel_exporter_otlp_endpoint": None,
            "jwt_issuer": ISSUER,
            "jwt_audience": AUDIENCE,
            "jwks_url_override": jwks_server.jwks_url,
            "auth_url": stand_in.url,
            "bookmarks_url": stand_in.url,
            "enrichment_url": stand_in.url,
            "rate_limit_per_minute": 0,
            "ip_rate_limit_per_minute": 0,
            "cors_origins": "",
            "trusted_proxy_hops": 0,
        }
        values.update(overrides)
        return Settings(**values)

    return make


@pytest.fixture(scope="session")
def start_gateway(gateway_settings: Callable[..., Settings]) -> StartGateway:
    @asynccontextmanager
    async def start(**overrides: Any) -> AsyncIterator[RunningGateway]:
        settings = gateway_settings(**overrides)
        app = create_app(settings)
        # Served like production: the services' HTTP protocol with its head limits (common.server).
        async with (
            serve_app(app, **server_options(settings)) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            await wait_ready(client)
            yield RunningGateway(url=url, app=app, client=client, settings=settings)

    return start


@pytest.fixture(scope="session")
async def gateway(start_gateway: StartGateway) -> AsyncIterator[RunningGateway]:
    """A shared gateway without rate limits, all upstreams on the stand-in."""
    async with start_gateway() as running:
        yield running


@pytest.fixture(scope="session")
async def producer(infra: Any) -> AsyncIterator[AIOKafkaProducer]:
    producer = create_producer(infra.kafka_bootstrap)
    await producer.start()
    yield producer
    await producer.stop()


Publish = Callable[[Event], Any]


@pytest.fixture(scope="session")
def publish(producer: AIOKafkaProducer) -> Publish:
    async def send(event: Event) -> Any:
        return await producer.send_and_wait(event.topic, serialize_event(event), key=event.key.encode())

    return send
