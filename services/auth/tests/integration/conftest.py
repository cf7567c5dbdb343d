"""The auth app against the real PostgreSQL and broker of ``infra``; identity providers are local JWKS servers."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaConsumer
from asgi_lifespan import LifespanManager
from fastapi import FastAPI
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from auth.main import create_app
from auth.settings import Settings
from devstack.testing import LocalJwksServer

ADMIN_TOKEN = "test-admin-token-7c1f"
IDP_A_ISSUER = "https://idp-a.test"
IDP_A_AUDIENCE = "client-a"
IDP_B_ISSUER = "https://idp-b.test"
IDP_B_AUDIENCE = "client-b"

# Tables that hold rows of a user (the test of account deletion checks that each is empty for it).
USER_TABLES = (
    "users",
    "identities",
    "user_settings",
    "subscriptions",
    "refresh_token_families",
    "refresh_tokens",
    "pairing_codes",
)


@pytest.fixture(scope="session")
def idp_a() -> Iterator[LocalJwksServer]:
    server = LocalJwksServer(issuer=IDP_A_ISSUER, audience=IDP_A_AUDIENCE).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def idp_b() -> Iterator[LocalJwksServer]:
    server = LocalJwksServer(issuer=IDP_B_ISSUER, audience=IDP_B_AUDIENCE).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def make_settings(infra: Any, idp_a: LocalJwksServer, idp_b: LocalJwksServer) -> Callable[..., Settings]:
    """Settings of a test app: every variable explicit so the developer's environment cannot leak in."""

    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "database_url": infra.dsn("auth"),
            "kafka_bootstrap_servers": infra.kafka_bootstrap,
            "otel_exporter_otlp_endpoint": None,
            "admin_token": ADMIN_TOKEN,
            "anonymous_rate_limit_per_minute": 0,
            "signing_keys_dir": None,
            "idp_a_jwks_url": idp_a.jwks_url,
            "idp_a_issuer": IDP_A_ISSUER,
            "idp_a_audience": IDP_A_AUDIENCE,
            "idp_b_jwks_url": idp_b.jwks_url,
            "idp_b_issuer": IDP_B_ISSUER,
            "idp_b_audience": IDP_B_AUDIENCE,
            "db_pool_size": 5,
        }
        values.update(overrides)
        return Settings(**values)

    return make


@asynccontextmanager
async def running(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """The app with its lifespan, and a client that calls it in-process (peer address 127.0.0.1)."""
    async with (
        LifespanManager(app, startup_timeout=60, shutdown_timeout=60),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://auth.test") as client,
    ):
        yield client


@pytest.fixture(scope="session")
def run_app() -> Callable[[Settings], Any]:
    """``async with run_app(settings) as client``: another app instance (other configuration)."""

    def run(settings: Settings) -> Any:
        return running(create_app(settings))

    return run


@pytest.fixture(scope="session")
async def app(make_settings: Callable[..., Settings]) -> AsyncIterator[FastAPI]:
    application = create_app(make_settings())
    async with LifespanManager(application, startup_timeout=60, shutdown_timeout=60):
        yield application


@pytest.fixture(scope="session")
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://auth.test") as c:
        yield c


@pytest.fixture(scope="session")
async def db(infra: Any) -> AsyncIterator[AsyncEngine]:
    """A separate connection to the auth database for assertions about stored rows."""
    engine = create_async_engine(infra.dsn("auth"), pool_size=2)
    yield engine
    await engine.dispose()


@dataclass
class Api:
    """Short ways to drive the auth API in tests."""

    client: httpx.AsyncClient
    idp_a: LocalJwksServer
    idp_b: LocalJwksServer
    db: AsyncEngine

    @staticmethod
    def bearer(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    async def anonymous(self) -> dict[str, Any]:
        response = await self.client.post("/v1/auth/anonymous")
        assert response.status_code == 200, response.text
        return dict(response.json())

    def id_token_a(self, sub: str | None = None, **claims: Any) -> str:
        return self.idp_a.mint(sub=sub or f"a-{uuid.uuid4().hex}", claims=claims)

    def id_token_b(self, sub: str | None = None, **claims: Any) -> str:
        return self.idp_b.mint(sub=sub or f"b-{uuid.uuid4().hex}", claims=claims)

    async def sign_in_a(self, id_token: str, *, access: str | None = None, link: bool | None = None) -> httpx.Response:
        body: dict[str, Any] = {"idToken": id_token}
        if link is not None:
            body["link"] = link
        return await self.client.post("/v1/auth/oauth/idp-a", json=body, headers=self.bearer(access) if access else {})

    async def sign_in_b(self, id_token: str, *, access: str | None = None, link: bool | None = None) -> httpx.Response:
        body: dict[str, Any] = {"identityToken": id_token, "authorizationCode": "c0de"}
        if link is not None:
            body["link"] = link
        return await self.client.post("/v1/auth/oauth/idp-b", json=body, headers=self.bearer(access) if access else {})

    async def me(self, access: str) -> httpx.Response:
        return await self.client.get("/v1/me", headers=self.bearer(access))

    async def refresh(self, refresh_token: Any) -> httpx.Response:
        return await self.client.post("/v1/auth/refresh", json={"refreshToken": refresh_token})

    async def rows_of(self, user_id: str) -> dict[str, int]:
        """How many rows each auth table holds for the user."""
        counts: dict[str, int] = {}
        async with self.db.connect() as conn:
            for table in USER_TABLES:
                column = "id" if table == "users" else "user_id"
                result = await conn.execute(
                    text(f"SELECT count(*) FROM {table} WHERE {column} = :u"), {"u": uuid.UUID(user_id)}
                )
                counts[table] = int(result.scalar_one())
        return counts

    async def table_counts(self) -> dict[str, int]:
        """Row counts of every auth table and the outbox: a request that changes nothing leaves them alone."""
        counts: dict[str, int] = {}
        async with self.db.connect() as conn:
            for table in (*USER_TABLES, "outbox", "signing_keys"):
                counts[table] = int((await conn.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one())
        return counts


@pytest.fixture
def api(client: httpx.AsyncClient, idp_a: LocalJwksServer, idp_b: LocalJwksServer, db: AsyncEngine) -> Api:
    return Api(client=client, idp_a=idp_a, idp_b=idp_b, db=db)


@pytest.fixture(scope="session")
def consume(infra: Any) -> Callable[..., Any]:
    """``await consume(topic, predicate)``: the first event on the real broker topic that matches."""

    async def find(topic: str, predicate: Callable[[dict[str, Any]], bool], *, limit_seconds: float = 60) -> Any:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=infra.kafka_bootstrap,
            group_id=None,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        try:
            loop = asyncio.get_running_loop()
            # A bound on waiting for delivery, not a timing assertion: the test fails only if it never arrives.
            deadline = loop.time() + limit_seconds
            while loop.time() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                for records in batches.values():
                    for record in records:
                        event = json.loads(record.value or b"{}")
                        if predicate(event):
                            return record, event
            raise AssertionError(f"no matching event on {topic}")
        finally:
            await consumer.stop()

    return find


@pytest.fixture(scope="session")
def admin_token() -> str:
    return ADMIN_TOKEN
