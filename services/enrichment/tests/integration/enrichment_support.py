"""Helpers of the enrichment integration tests (fixtures in conftest.py).

Real PostgreSQL and broker (``infra`` from devstack), the real auth service on a free port, and fakes
only for the outside world: a local web site serving the pages that get enriched.
"""

from __future__ import annotations

import asyncio
import functools
import html
import io
import uuid
import zlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from aiokafka import AIOKafkaProducer
from PIL import Image
from sqlalchemy import RowMapping, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from common.db import SessionFactory, create_session_factory
from common.events import Event
from enrichment.previews.images import PICTURE_SIDE, reencode
from enrichment.settings import Settings

ADMIN_TOKEN = "enrichment-tests-admin"

ARTICLE_TEXT = (
    "Sourdough bread is made by fermenting dough with naturally occurring lactobacilli and wild yeast. "
    "The lactic acid produced by the bacteria gives the bread its characteristic sour taste and improves "
    "its keeping qualities. Bakers maintain a starter, a mixture of flour and water, and feed it daily. "
    "A long, cool fermentation develops flavour, while a hot oven with steam creates an open crumb and a "
    "crisp, blistered crust. Whole grain flours ferment faster than white flour because they carry more "
    "nutrients for the microbes."
)


def _png(width: int, height: int) -> bytes:
    picture = Image.new("RGB", (width, height))
    picture.putdata([(x * 255 // width, y * 255 // height, 128) for y in range(height) for x in range(width)])
    out = io.BytesIO()
    picture.save(out, "PNG")
    return out.getvalue()


THUMBNAIL_PNG = _png(48, 32)
# What the platform stores and serves for it: the same pixels, re-encoded (enrichment.previews.images).
THUMBNAIL = reencode(THUMBNAIL_PNG, max_side=PICTURE_SIDE, max_pixels=16_777_216)
assert THUMBNAIL is not None
THUMBNAIL_CAP = 2 * 1024 * 1024


def article_html(key: str, *, image: str | None = None) -> str:
    paragraphs = "".join(f"<p>{ARTICLE_TEXT}</p>" for _ in range(3))
    return (
        "<!doctype html><html lang='en'><head>"
        f"<title>Plain title {key}</title>"
        f"<meta property='og:title' content='Sourdough guide {key}'>"
        "<meta property='og:description' content='How sourdough bread rises without commercial yeast.'>"
        f"<meta property='og:image' content='{image or f'/img/{key}.png'}'>"
        f"</head><body><nav>Home | About</nav><article><h1>Sourdough guide {key}</h1>{paragraphs}</article>"
        "</body></html>"
    )


# --- the outside world: a web site ------------------------------------------------------------------


@dataclass
class Site:
    base_url: str = ""
    hits: Counter[str] = field(default_factory=Counter)
    slow_started: dict[str, asyncio.Event] = field(default_factory=dict)
    released: dict[str, asyncio.Event] = field(default_factory=dict)

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def slow_event(self, key: str) -> asyncio.Event:
        return self.slow_started.setdefault(key, asyncio.Event())

    def release_event(self, key: str) -> asyncio.Event:
        """Set by a test to let the held page ``/held/{key}`` answer."""
        return self.released.setdefault(key, asyncio.Event())


def build_site(site: Site) -> Starlette:
    def count(request: Request) -> int:
        site.hits[request.url.path] += 1
        return site.hits[request.url.path]

    async def article(request: Request) -> Response:
        count(request)
        return HTMLResponse(article_html(request.path_params["key"]))

    async def status(request: Request) -> Response:
        count(request)
        return PlainTextResponse("nope", status_code=int(request.path_params["code"]))

    async def flaky(request: Request) -> Response:
        # Answers 503 for the first `fails` requests, then the article.
        if count(request) <= int(request.path_params["fails"]):
            return PlainTextResponse("try later", status_code=503)
        return HTMLResponse(article_html(request.path_params["key"]))

    async def slow_once(request: Request) -> Response:
        # The first request hangs until its client goes away (a worker killed while waiting on it);
        # later requests answer at once.
        if count(request) == 1:
            site.slow_event(request.path_params["key"]).set()
            for _ in range(6000):
                if await request.is_disconnected():
                    return PlainTextResponse("client gone", status_code=499)
                await asyncio.sleep(0.1)
        return HTMLResponse(article_html(request.path_params["key"]))

    async def held(request: Request) -> Response:
        # Answers the article once the test releases it (an attempt that ends when the test chooses).
        count(request)
        key = request.path_params["key"]
        site.slow_event(key).set()
        await site.release_event(key).wait()
        return HTMLResponse(article_html(key))

    async def hang(request: Request) -> Response:
        # The first `times` requests hang until their client goes away (workers killed mid-attempt).
        if count(request) <= int(request.path_params["times"]):
            for _ in range(6000):
                if await request.is_disconnected():
                    return PlainTextResponse("client gone", status_code=499)
                await asyncio.sleep(0.1)
        return HTMLResponse(article_html(request.path_params["key"]))

    async def render_hang(request: Request) -> Response:
        # Answers the fetcher at once; the first request of the browser (Chrome's user agent) hangs
        # until it goes away (a worker killed while Chromium renders the page).
        count(request)
        if "Chrome/" in request.headers.get("user-agent", ""):
            site.hits[f"{request.url.path}#browser"] += 1
            if site.hits[f"{request.url.path}#browser"] == 1:
                for _ in range(6000):
                    if await request.is_disconnected():
                        return PlainTextResponse("client gone", status_code=499)
                    await asyncio.sleep(0.1)
        return HTMLResponse(article_html(request.path_params["key"]))

    async def image_png(request: Request) -> Response:
        count(request)
        return Response(THUMBNAIL_PNG, media_type="image/png")

    async def asset(request: Request) -> Response:
        # Anything a page may load (images, styles, scripts): counted, so a test sees that it was asked for.
        count(request)
        return PlainTextResponse("/* asset */", media_type="text/css")

    async def with_image(request: Request) -> Response:
        # A page whose og:image is the test image of that variant.
        count(request)
        variant, key = request.path_params["variant"], request.path_params["key"]
        return HTMLResponse(article_html(key, image=f"/image/{variant}/{key}"))

    async def image(request: Request) -> Response:
        # png: a PNG image; html / svg: a type a thumbnail must not be; huge: a PNG one byte over the cap.
        count(request)
        variant = request.path_params["variant"]
        if variant == "html":
            return HTMLResponse("<p>not an image</p>")
        if variant == "svg":
            return Response(
                "<svg xmlns='http://www.w3.org/2000/svg'><script>1</script></svg>", media_type="image/svg+xml"
            )
        body = THUMBNAIL_PNG if variant == "png" else b"\0" * (THUMBNAIL_CAP + 1)
        return Response(body, media_type="image/png")

    async def preview_page(request: Request) -> Response:
        # A page whose head says everything a preview shows, followed by a long body nobody should read.
        count(request)
        key = request.path_params["key"]
        head = (
            "<!doctype html><html lang='de-AT'><head><meta charset='utf-8'>"
            f"<title>Plain {key}</title>"
            f"<meta property='og:title' content='Brot backen {key}'>"
            "<meta property='og:description' content='Wie Sauerteig ohne Hefe aufgeht.'>"
            "<meta property='og:site_name' content='Backstube'>"
            f"<link rel='canonical' href='/preview/{key}?canonical=1'>"
            f"<meta property='og:image' content='/img/{key}.png'>"
            f"<link rel='icon' sizes='32x32' href='/icon/{key}.png'>"
            "</head>"
        )
        return HTMLResponse(head + "<body>" + "<p>filler</p>" * 300_000 + "</body></html>")

    async def preview_hostile(request: Request) -> Response:
        count(request)
        variant, key = request.path_params["variant"], request.path_params["key"]
        return _hostile_preview(site, variant, key)

    async def canonical(request: Request) -> Response:
        # The article, naming ?to= as its canonical URL.
        count(request)
        named = html.escape(request.query_params["to"], quote=True)
        page = article_html(request.path_params["key"])
        return HTMLResponse(page.replace("</head>", f"<link rel='canonical' href='{named}'></head>", 1))

    async def plain(request: Request) -> Response:
        count(request)
        return PlainTextResponse(f"Release notes {request.path_params['key']}\n\n{ARTICLE_TEXT}")

    return Starlette(
        routes=[
            Route("/article/{key}", article),
            Route("/status/{code:int}/{key}", status),
            Route("/flaky/{fails:int}/{key}", flaky),
            Route("/slow-once/{key}", slow_once),
            Route("/hang/{times:int}/{key}", hang),
            Route("/held/{key}", held),
            Route("/render-hang/{key}", render_hang),
            Route("/plain/{key}", plain),
            Route("/canonical/{key}", canonical),
            Route("/asset/{rest:path}", asset),
            Route("/img/{name}", image_png),
            Route("/with-image/{variant}/{key}", with_image),
            Route("/image/{variant}/{key}", image),
            Route("/preview/{key}", preview_page),
            Route("/icon/{name}", image_png),
            Route("/hostile/{variant}/{key}", preview_hostile),
        ]
    )


def _gzip_bomb(size: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b" " * (1024 * 1024)
    parts = [compressor.compress(b"<html><head><title>bomb</title>")]
    parts += [compressor.compress(chunk) for _ in range(size // len(chunk))]
    return b"".join([*parts, compressor.flush()])


@functools.cache
def _huge_png(side: int) -> bytes:
    """A PNG whose header says ``side`` x ``side`` pixels: a few KiB that would decode to gigabytes."""
    out = io.BytesIO()
    Image.new("1", (side, side)).save(out, "PNG", optimize=True)
    return out.getvalue()


def _polyglot_gif() -> bytes:
    """A valid GIF that carries markup in its comment block (an image that is also a script host)."""
    out = io.BytesIO()
    Image.new("P", (2, 2)).save(out, "GIF", comment=b"<html><script>alert(1)</script></html>")
    return out.getvalue()


POLYGLOT_GIF = _polyglot_gif()


def _hostile_preview(site: Site, variant: str, key: str) -> Response:
    """Pages and images that try to break a preview (tests/integration/test_previews.py)."""
    page = (
        "<!doctype html><html><head><title>Hostile {variant}</title>"
        "<meta property='og:image' content='{image}'></head><body>x</body></html>"
    )
    if variant == "late-title":  # the title comes after more than the head budget
        return HTMLResponse("<html><head>" + "<meta name='x' content='y'>" * 40_000 + "<title>Too late</title></head>")
    if variant == "bomb":
        return Response(_gzip_bomb(64 * 1024 * 1024), media_type="text/html", headers={"Content-Encoding": "gzip"})
    if variant == "bad-encoding":
        body = b"<html><head><meta charset='utf-8'><title>Caf\xe9 \xff\xfe cr\xe8me</title></head></html>"
        return Response(body, media_type="text/html; charset=base64")
    if variant == "private-redirect":
        return Response(status_code=302, headers={"Location": "http://169.254.169.254/latest/meta-data/"})
    if variant == "private-image":
        return HTMLResponse(page.format(variant=variant, image="http://10.0.0.7/cover.png"))
    if variant in ("svg", "huge-pixels", "polyglot", "html"):
        return HTMLResponse(page.format(variant=variant, image=f"/hostile/{variant}-image/{key}"))
    if variant == "svg-image":
        return Response(
            "<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>", media_type="image/svg+xml"
        )
    if variant == "huge-pixels-image":
        return Response(_huge_png(30_000), media_type="image/png")
    if variant == "polyglot-image":
        return Response(POLYGLOT_GIF, media_type="image/gif")
    if variant == "html-image":
        return Response("<script>alert(1)</script>", media_type="image/png")
    if variant == "not-html":
        return Response(b"%PDF-1.7 ...", media_type="application/pdf")
    return PlainTextResponse("unknown variant", status_code=404)


# --- auth (the real service) -------------------------------------------------------------------------


@dataclass(frozen=True)
class User:
    id: uuid.UUID
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


class AuthUsers:
    """Creates users through the real auth API and sets their consent and plan."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.http = httpx.AsyncClient(base_url=base_url, timeout=10)

    async def create(self, *, use_ai: bool = True, is_pro: bool = False) -> User:
        response = await self.http.post("/v1/auth/anonymous")
        assert response.status_code == 200, response.text
        session = response.json()
        user = User(id=uuid.UUID(session["user"]["id"]), token=session["accessToken"])
        if use_ai:
            await self.set_consent(user, True)
        if is_pro:
            await self.set_pro(user, True)
        return user

    async def set_consent(self, user: User, use_ai: bool) -> None:
        response = await self.http.patch("/v1/me/settings", json={"useAi": use_ai}, headers=user.headers)
        assert response.status_code == 200, response.text

    async def set_pro(self, user: User, is_pro: bool) -> None:
        response = await self.http.put(
            f"/v1/admin/users/{user.id}/subscription", json={"isPro": is_pro}, headers={"X-Admin-Token": ADMIN_TOKEN}
        )
        assert response.status_code == 204, response.text

    async def delete(self, user: User) -> None:
        response = await self.http.delete("/v1/account", headers=user.headers)
        assert response.status_code == 204, response.text


def auth_app(infra: Any) -> Any:
    from auth.main import create_app as create_auth_app
    from auth.settings import Settings as AuthSettings

    return create_auth_app(
        AuthSettings(
            database_url=infra.dsn("auth"),
            kafka_bootstrap_servers=infra.kafka_bootstrap,
            admin_token=ADMIN_TOKEN,
            anonymous_rate_limit_per_minute=0,
        )
    )


# --- the database ------------------------------------------------------------------------------------


class Db:
    """Direct SQL on an enrichment database, for arranging state and checking outcomes."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine: AsyncEngine = create_async_engine(url, pool_size=5)
        self.sessions: SessionFactory = create_session_factory(self.engine)

    async def rows(self, sql: str, **params: Any) -> list[RowMapping]:
        async with self.engine.begin() as conn:  # commits: arranging statements write
            return list((await conn.execute(text(sql), params)).mappings())

    async def one(self, sql: str, **params: Any) -> RowMapping:
        found = await self.rows(sql, **params)
        assert len(found) == 1, found
        return found[0]

    async def scalar(self, sql: str, **params: Any) -> Any:
        async with self.engine.connect() as conn:
            return (await conn.execute(text(sql), params)).scalar()

    async def execute(self, sql: str, **params: Any) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(text(sql), params)

    async def events(self, topic: str, **payload_fields: str) -> list[dict[str, Any]]:
        """Outbox payloads of ``topic`` whose top-level string fields match."""
        found = await self.rows("SELECT payload FROM outbox WHERE topic = :t ORDER BY id", t=topic)
        payloads = [dict(r["payload"]) for r in found]
        return [p for p in payloads if all(str(p.get(k)) == v for k, v in payload_fields.items())]

    async def close(self) -> None:
        await self.engine.dispose()


class CallCount:
    """Counts the calls of the async function ``owner.name`` (each still made, with its answer): how often
    a loop asked the database, for the tests of its idle polling."""

    def __init__(self, monkeypatch: Any, owner: Any, name: str) -> None:
        self.calls = 0
        real = getattr(owner, name)

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return await real(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)


class MutableClock:
    """The quota clock: real time until a test pins it."""

    def __init__(self) -> None:
        self._fixed: datetime | None = None

    def now(self) -> datetime:
        return self._fixed or datetime.now(UTC)

    def set(self, when: datetime | None) -> None:
        self._fixed = when

    def advance(self, **delta: float) -> None:
        self._fixed = self.now() + timedelta(**delta)


def enrichment_settings(infra: Any, database_url: str, *, auth_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "kafka_bootstrap_servers": infra.kafka_bootstrap,
        "auth_url": auth_url,
        "allow_private_networks": True,
        "retry_delays_seconds": (0.2, 0.4),
        "browser": "off",
        "openai_api_key": None,
        "worker_poll_seconds": 0.2,
        # Off unless a test turns it on: a pass would ask BOOKMARKS_URL, which no other test serves.
        "anti_entropy_interval_seconds": 0,
        **overrides,
    }
    return Settings(**values)


@dataclass
class Api:
    base_url: str
    http: httpx.AsyncClient
    clock: MutableClock
    db: Db

    async def enqueue(self, user: User, bookmark_id: str, url: str, **extra: Any) -> httpx.Response:
        body = {"clientBookmarkId": bookmark_id, "url": url, "clientSavedAt": "2030-05-01T10:00:00Z", **extra}
        return await self.http.post("/v1/enrichment/enqueue", json=body, headers=user.headers)

    async def status(self, user: User, bookmark_id: str) -> httpx.Response:
        return await self.http.get(
            "/v1/enrichment/status", params={"clientBookmarkId": bookmark_id}, headers=user.headers
        )


async def consumer_started(app: Any) -> bool:
    return bool(app.state.consumer.started.is_set())


async def publish(infra: Any, *events: Event) -> None:
    """Send ``events`` to the real broker as another service would (keyed by user)."""
    producer = AIOKafkaProducer(bootstrap_servers=infra.kafka_bootstrap, enable_idempotence=False)
    await producer.start()
    try:
        for event in events:
            await producer.send_and_wait(event.topic, event.model_dump_json().encode(), key=event.key.encode())
    finally:
        await producer.stop()
