"""Bookmarks service under test: the real app on the real PostgreSQL and broker of ``infra``.

Access tokens come from a local JWKS server with the issuer/audience our auth service uses: these tests
exercise the bookmarks service's own token verification; the real auth service is covered end to end.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaProducer
from asgi_lifespan import LifespanManager
from sqlalchemy import text
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from bookmarks.main import create_app
from bookmarks.settings import Settings
from common.events import Event
from common.outbox import create_producer
from devstack.testing import LocalJwksServer


@pytest.fixture(scope="session")
def access_jwks() -> Iterator[LocalJwksServer]:
    server = LocalJwksServer(issuer="bookmarks-auth", audience="bookmarks-api").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def bookmarks_settings(infra: Any, access_jwks: LocalJwksServer) -> Settings:
    return Settings(
        database_url=infra.dsn("bookmarks"),
        kafka_bootstrap_servers=infra.kafka_bootstrap,
        auth_url=f"http://127.0.0.1:{access_jwks.port}",
    )


@pytest.fixture(scope="session")
async def bookmarks_app(bookmarks_settings: Settings) -> AsyncIterator[Any]:
    # A group of its own: a bookmarks process a test kills (the import crash tests) stays a member of the
    # default group until its session times out, and would stall this consumer's rebalance meanwhile.
    app = create_app(bookmarks_settings, consumer_group=f"bookmarks-{uuid.uuid4()}")
    async with LifespanManager(app, startup_timeout=60, shutdown_timeout=60):
        await asyncio.wait_for(app.state.consumer.started.wait(), 60)
        yield app


@pytest.fixture(scope="session")
async def http(bookmarks_app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=bookmarks_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bookmarks.test") as client:
        yield client


@dataclass
class User:
    id: uuid.UUID
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def new_user(access_jwks: LocalJwksServer) -> User:
    user_id = uuid.uuid4()
    return User(user_id, access_jwks.mint(sub=str(user_id), claims={"jti": uuid.uuid4().hex}))


@pytest.fixture
def make_user(access_jwks: LocalJwksServer) -> Callable[[], User]:
    return lambda: new_user(access_jwks)


@pytest.fixture(scope="module")
def module_user(access_jwks: LocalJwksServer) -> User:
    """One user for the tests of a module that share data they only read; other modules' users are others."""
    return new_user(access_jwks)


@pytest.fixture
def user(make_user: Callable[[], User]) -> User:
    return make_user()


@pytest.fixture(scope="session")
async def producer(infra: Any) -> AsyncIterator[AIOKafkaProducer]:
    p = create_producer(infra.kafka_bootstrap)
    await p.start()
    yield p
    await p.stop()


@pytest.fixture(scope="session")
def publish(producer: AIOKafkaProducer) -> Callable[[Event], Awaitable[None]]:
    async def send(event: Event) -> None:
        await producer.send_and_wait(event.topic, event.model_dump_json().encode(), key=event.key.encode())

    return send


SyncResult = tuple[dict[str, dict[str, Any]], dict[str, str], str | None]


async def sync_all(http: httpx.AsyncClient, user: User, cursor: str | None = None, limit: int = 200) -> SyncResult:
    """Follow the delta stream to its end; return live records, tombstones and the last request's cursor."""
    live: dict[str, dict[str, Any]] = {}
    dead: dict[str, str] = {}
    while True:
        params = {"limit": str(limit)}
        if cursor:
            params["cursor"] = cursor
        response = await http.get("/v1/bookmarks/delta", params=params, headers=user.headers)
        assert response.status_code == 200, response.text
        data = response.json()["data"]
        for record in data["upserts"]:
            live[record["clientBookmarkId"]] = record
            dead.pop(record["clientBookmarkId"], None)
        for tomb in data["tombstones"]:
            live.pop(tomb["clientBookmarkId"], None)
            dead[tomb["clientBookmarkId"]] = tomb["deletedAt"]
        if data["nextCursor"] is None:
            return live, dead, cursor
        cursor = data["nextCursor"]


@pytest.fixture
def sync(http: httpx.AsyncClient) -> Callable[..., Awaitable[SyncResult]]:
    async def run(user: User, cursor: str | None = None, limit: int = 200) -> SyncResult:
        return await sync_all(http, user, cursor, limit)

    return run


@dataclass
class Library:
    """What a device holds after applying every page: bookmarks, collections and highlights, live and deleted."""

    bookmarks: dict[str, dict[str, Any]]
    bookmark_tombstones: dict[str, str]
    collections: dict[str, dict[str, Any]]
    collection_tombstones: dict[str, str]
    cursor: str | None = None
    highlights: dict[str, dict[str, Any]] = field(default_factory=dict)
    highlight_tombstones: dict[str, str] = field(default_factory=dict)

    def apply(self, data: dict[str, Any]) -> None:
        for record in data["upserts"]:
            self.bookmarks[record["clientBookmarkId"]] = record
            self.bookmark_tombstones.pop(record["clientBookmarkId"], None)
        for tomb in data["tombstones"]:
            self.bookmarks.pop(tomb["clientBookmarkId"], None)
            self.bookmark_tombstones[tomb["clientBookmarkId"]] = tomb["deletedAt"]
        for record in data["collections"]:
            self.collections[record["id"]] = record
            self.collection_tombstones.pop(record["id"], None)
        for tomb in data["collectionTombstones"]:
            self.collections.pop(tomb["id"], None)
            self.collection_tombstones[tomb["id"]] = tomb["deletedAt"]
        for record in data["highlights"]:
            self.highlights[record["id"]] = record
            self.highlight_tombstones.pop(record["id"], None)
        for tomb in data["highlightTombstones"]:
            self.highlights.pop(tomb["id"], None)
            self.highlight_tombstones[tomb["id"]] = tomb["deletedAt"]


async def sync_library(
    http: httpx.AsyncClient,
    user: User,
    library: Library | None = None,
    *,
    cursor: str | None = None,
    limit: int = 200,
) -> Library:
    """Follow the delta stream to its end from ``library.cursor`` (or ``cursor`` for a new library),
    applying every page to ``library``."""
    library = library or Library({}, {}, {}, {}, cursor)
    while True:
        params = {"limit": str(limit)} | ({"cursor": library.cursor} if library.cursor else {})
        response = await http.get("/v1/bookmarks/delta", params=params, headers=user.headers)
        assert response.status_code == 200, response.text
        data = response.json()["data"]
        groups = ("upserts", "tombstones", "collections", "collectionTombstones", "highlights", "highlightTombstones")
        count = sum(len(data[k]) for k in groups)
        assert count <= limit
        library.apply(data)
        if data["nextCursor"] is None:
            return library
        library.cursor = data["nextCursor"]


@pytest.fixture
def sync_lib(http: httpx.AsyncClient) -> Callable[..., Awaitable[Library]]:
    async def run(user: User, library: Library | None = None, **kwargs: Any) -> Library:
        return await sync_library(http, user, library, **kwargs)

    return run


@dataclass
class LargeLibrary:
    """One owner's library of many live bookmarks (``https://big.example/<n>``), analysed, so the planner
    chooses as for a real large library rather than for a test user's few rows."""

    owner: uuid.UUID
    engine: AsyncEngine

    async def plan(self, statement: Any) -> str:
        """EXPLAIN of ``statement`` (its parameters inlined)."""
        sql = str(statement.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
        async with self.engine.connect() as conn:
            # This owner is most of a test table, never of a real one: there, the table is read through indexes.
            await conn.execute(text("SET enable_seqscan = off"))
            return "\n".join(row[0] for row in await conn.exec_driver_sql("EXPLAIN " + sql))


@pytest.fixture(scope="module")
async def large_library(infra: Any) -> AsyncIterator[LargeLibrary]:
    owner = uuid.uuid4()
    engine = create_async_engine(infra.dsn("bookmarks"))
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO bookmarks (owner_uid, client_bookmark_id, url, normalized_url, domain, created_at, updated_at)"
                " SELECT :owner, 'big-' || n, 'https://big.example/' || n, 'https://big.example/' || n, 'big.example',"
                " now(), now() + n * interval '1 microsecond' FROM generate_series(1, 5000) AS n"
            ),
            {"owner": owner},
        )
        await conn.execute(text("ANALYZE bookmarks"))
    yield LargeLibrary(owner, engine)
    async with engine.begin() as conn:
        await conn.execute(text("DELETE FROM bookmarks WHERE owner_uid = :owner"), {"owner": owner})
    await engine.dispose()
