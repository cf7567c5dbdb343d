"""Helpers of the black-box scenarios: devices (a session plus a local replica), the local web site that
enrichment fetches, the nudge socket, error-contract checks and a scan of the service databases.

Everything goes through the gateway's public surface except :func:`rows_referencing`, which reads the
databases to prove that deleted data is really gone (read only, never to arrange a scenario).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import io
import json
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import asyncpg
import httpx
from PIL import Image
from websockets.asyncio.client import ClientConnection, connect

from devstack.testing import LocalJwksServer

# --- error contract ------------------------------------------------------------------------------


def assert_error(response: httpx.Response, status: int, code: str | None = None) -> dict[str, str]:
    """``response`` is the ``{code, message}`` error of docs/api-guide.md, section 1, with JSON type and a request id."""
    where = f"{response.request.method} {response.request.url.path}"
    assert response.status_code == status, (
        f"{where}: expected {status}, got {response.status_code}: {response.text[:500]}"
    )
    assert response.headers.get("content-type", "").startswith("application/json"), (
        f"{where}: error content-type {response.headers.get('content-type')!r}"
    )
    body = response.json()
    assert isinstance(body, dict) and set(body) == {"code", "message"}, f"{where}: error body {body!r}"
    assert isinstance(body["code"], str) and isinstance(body["message"], str) and body["message"], body
    if code is not None:
        assert body["code"] == code, f"{where}: expected code {code!r}, got {body!r}"
    assert response.headers.get("x-request-id"), f"{where}: no X-Request-Id"
    return body


def expect(response: httpx.Response, status: int) -> httpx.Response:
    where = f"{response.request.method} {response.request.url.path}"
    assert response.status_code == status, (
        f"{where}: expected {status}, got {response.status_code}: {response.text[:500]}"
    )
    return response


# --- devices -------------------------------------------------------------------------------------


@dataclass
class Device:
    """One signed-in client: its session, its replica of the server's bookmarks and its delta position.

    ``records`` holds live bookmarks exactly as the server last sent them, ``deleted`` the tombstones.
    ``queue`` collects writes made "offline", replayed later in order by :meth:`replay`.
    """

    http: httpx.AsyncClient
    session: dict[str, Any]
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    deleted: dict[str, str] = field(default_factory=dict)
    cursor: str | None = None
    queue: list[tuple[str, str, dict[str, Any] | None]] = field(default_factory=list)

    @property
    def token(self) -> str:
        return str(self.session["accessToken"])

    @property
    def user_id(self) -> str:
        return str(self.session["user"]["id"])

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {**self.auth, **kwargs.pop("headers", {})}
        return await self.http.request(method, path, headers=headers, **kwargs)

    async def me(self) -> dict[str, Any]:
        return dict(expect(await self.request("GET", "/v1/me"), 200).json())

    async def enable_ai(self) -> None:
        response = expect(await self.request("PATCH", "/v1/me/settings", json={"useAi": True}), 200)
        assert response.json() == {"useAi": True}

    async def put(self, bookmark_id: str, body: dict[str, Any]) -> dict[str, Any]:
        response = expect(await self.request("PUT", f"/v1/bookmarks/{bookmark_id}", json=body), 200)
        return dict(response.json()["data"])

    async def delete(self, bookmark_id: str) -> None:
        expect(await self.request("DELETE", f"/v1/bookmarks/{bookmark_id}"), 204)

    async def enqueue(self, bookmark_id: str, url: str, saved_at: str = "2026-01-01T00:00:00Z") -> httpx.Response:
        body = {"clientBookmarkId": bookmark_id, "url": url, "clientSavedAt": saved_at}
        return await self.request("POST", "/v1/enrichment/enqueue", json=body)

    async def status(self, bookmark_id: str) -> httpx.Response:
        return await self.request("GET", "/v1/enrichment/status", params={"clientBookmarkId": bookmark_id})

    # -- offline queue ----------------------------------------------------------------------------

    def queue_put(self, bookmark_id: str, body: dict[str, Any]) -> None:
        self.queue.append(("PUT", bookmark_id, body))

    def queue_delete(self, bookmark_id: str) -> None:
        self.queue.append(("DELETE", bookmark_id, None))

    async def replay(self) -> None:
        """Flush the offline queue in order (what a client does on reconnect)."""
        while self.queue:
            method, bookmark_id, body = self.queue.pop(0)
            if method == "PUT":
                assert body is not None
                await self.put(bookmark_id, body)
            else:
                await self.delete(bookmark_id)

    # -- delta sync -------------------------------------------------------------------------------

    async def sync(self, *, limit: int = 200) -> int:
        """Delta sync from the stored position (docs/api-guide.md, section 4); records applied."""
        cursor = self.cursor
        applied = 0
        while True:
            params: dict[str, Any] = {"limit": limit}
            if cursor:
                params["cursor"] = cursor
            data = expect(await self.request("GET", "/v1/bookmarks/delta", params=params), 200).json()["data"]
            assert data["cursor"] == cursor, f"delta echoed cursor {data['cursor']!r}, sent {cursor!r}"
            assert len(data["upserts"]) + len(data["tombstones"]) <= limit
            for record in data["upserts"]:
                self.records[record["clientBookmarkId"]] = record
                self.deleted.pop(record["clientBookmarkId"], None)
            for tombstone in data["tombstones"]:
                self.records.pop(tombstone["clientBookmarkId"], None)
                self.deleted[tombstone["clientBookmarkId"]] = tombstone["deletedAt"]
            applied += len(data["upserts"]) + len(data["tombstones"])
            if data["nextCursor"] is None:
                # Resume from the last request's cursor: it replays that page, then everything newer.
                self.cursor = cursor
                return applied
            cursor = data["nextCursor"]

    async def fresh_replica(self, *, limit: int = 200) -> Device:
        """A full sync from scratch with this session (what a newly installed client would see)."""
        fresh = Device(self.http, self.session)
        await fresh.sync(limit=limit)
        return fresh


async def anonymous(http: httpx.AsyncClient) -> Device:
    response = expect(await http.post("/v1/auth/anonymous"), 200)
    session = response.json()
    assert session["user"]["isAnonymous"] is True
    return Device(http, session)


def identity_token(idp: LocalJwksServer, sub: str, *, name: str = "E2E Person") -> str:
    return idp.mint(sub=sub, claims={"name": name, "email": f"{sub}@example.test"})


async def sign_in(http: httpx.AsyncClient, idp: LocalJwksServer, sub: str, *, name: str = "E2E Person") -> Device:
    response = await http.post("/v1/auth/oauth/idp-a", json={"idToken": identity_token(idp, sub, name=name)})
    session = expect(response, 200).json()
    assert session["user"]["isAnonymous"] is False
    return Device(http, session)


# --- waiting -------------------------------------------------------------------------------------


async def wait_for(check: Callable[[], Any], *, timeout: float = 120.0, interval: float = 0.25, what: str = "") -> Any:
    """Poll the async ``check`` until it returns something truthy (generous: the machine is shared)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = None
    while loop.time() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"{what or 'condition'} not met within {timeout:.0f} s (last value: {last!r})")


async def wait_enriched(device: Device, bookmark_id: str, *, timeout: float = 180.0) -> dict[str, Any]:
    """Poll the status endpoint until the job is completed; its ``data``. Fails at once on ``failed``."""

    async def done() -> dict[str, Any] | None:
        data = expect(await device.status(bookmark_id), 200).json()["data"]
        assert data["status"] != "failed", f"enrichment of {bookmark_id} failed: {data}"
        return data if data["status"] == "completed" else None

    return dict(await wait_for(done, timeout=timeout, what=f"enrichment of {bookmark_id} completed"))


# --- the nudge socket ----------------------------------------------------------------------------


@dataclass
class NudgeSocket:
    connection: ClientConnection
    messages: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)

    async def next(self, timeout: float = 90.0) -> Any:
        try:
            return await asyncio.wait_for(self.messages.get(), timeout)
        except TimeoutError:
            raise AssertionError(f"no message on the /v1/events socket within {timeout:.0f} s") from None

    def drain(self) -> list[Any]:
        out = []
        while not self.messages.empty():
            out.append(self.messages.get_nowait())
        return out


@contextlib.asynccontextmanager
async def nudge_socket(gateway_url: str, token: str) -> AsyncIterator[NudgeSocket]:
    """A WebSocket on ``/v1/events`` authenticated with the Bearer header; messages land in a queue."""
    url = gateway_url.replace("http://", "ws://", 1) + "/v1/events"
    async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}, proxy=None) as ws:
        sock = NudgeSocket(ws)

        async def pump() -> None:
            with contextlib.suppress(Exception):
                async for raw in ws:
                    sock.messages.put_nowait(json.loads(raw))

        task = asyncio.create_task(pump())
        try:
            yield sock
        finally:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


# --- the local web site --------------------------------------------------------------------------

ARTICLE_PARAGRAPHS = (
    "Sourdough bread is leavened by a culture of wild yeast and lactic acid bacteria instead of "
    "commercial baker's yeast. The starter is a simple mixture of flour and water that ferments for "
    "several days until it becomes active and bubbly.",
    "Bakers feed the starter regularly with fresh flour and water. A healthy starter doubles in size "
    "within a few hours of feeding and smells pleasantly sour, which is a sign that fermentation is "
    "working as intended.",
    "Long fermentation gives sourdough its open crumb, its chewy crust and its characteristic tangy "
    "flavour. The acids produced by the bacteria also help the bread keep fresh for longer than "
    "ordinary yeasted loaves.",
    "To bake a loaf, mix the starter with flour, water and salt, let the dough rise slowly, shape it, "
    "proof it overnight in the refrigerator and bake it in a very hot oven, ideally inside a covered "
    "cast iron pot.",
)


def _loaf_png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 40), (196, 140, 80)).save(out, "PNG")
    return out.getvalue()


LOAF_PNG = _loaf_png()


def article_html(title: str, *, description: str, extra_body: str = "") -> bytes:
    paragraphs = "\n".join(f"<p>{html.escape(p)}</p>" for p in ARTICLE_PARAGRAPHS)
    page = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<meta name="description" content="{html.escape(description)}">
<meta property="og:title" content="{html.escape(title)}">
<meta property="og:description" content="{html.escape(description)}">
<meta property="og:image" content="/images/loaf.png">
</head>
<body>
<article>
<h1>{html.escape(title)}</h1>
{paragraphs}
</article>
{extra_body}
</body>
</html>
"""
    return page.encode()


class LocalSite:
    """A web site on 127.0.0.1 (a thread of ``http.server``); unknown paths answer 404. ``statuses`` gives a
    path another answer (a page that fails); ``redirects`` makes a path a redirect ``(status, location)``.
    Only GET is served: a HEAD gets 501, as from many small servers."""

    def __init__(self) -> None:
        # Every article's og:image: the worker fetches it and keeps thumbnailUrl only for a real image.
        self.pages: dict[str, tuple[str, bytes]] = {"/images/loaf.png": ("image/png", LOAF_PNG)}
        self.statuses: dict[str, int] = {}
        self.redirects: dict[str, tuple[int, str]] = {}
        self.hits: dict[str, int] = {}
        self._server: ThreadingHTTPServer | None = None
        self.port = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def add_article(
        self, title: str, *, description: str = "How to bake sourdough bread at home.", extra_body: str = ""
    ) -> str:
        """Serve a fresh article page under a unique path; its URL."""
        path = f"/articles/{uuid.uuid4().hex}"
        self.pages[path] = (
            "text/html; charset=utf-8",
            article_html(title, description=description, extra_body=extra_body),
        )
        return self.url(path)

    def start(self) -> LocalSite:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's API
                path = self.path.split("?", 1)[0]
                site.hits[path] = site.hits.get(path, 0) + 1
                if path in site.redirects:
                    status, location = site.redirects[path]
                    self.send_response(status)
                    self.send_header("location", location)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                page = site.pages.get(path)
                if path in site.statuses:
                    content_type, body, status = "text/plain", b"not now", site.statuses[path]
                elif page is None:
                    content_type, body, status = "text/plain", b"not here", 404
                else:
                    (content_type, body), status = page, 200
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self._server.server_address[1])
        threading.Thread(target=self._server.serve_forever, name="e2e-local-site", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


# --- databases -----------------------------------------------------------------------------------

_COLUMNS = """
SELECT c.table_name, c.column_name, c.data_type
FROM information_schema.columns c
JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
  AND c.data_type IN ('uuid', 'text', 'character varying', 'jsonb', 'json')
ORDER BY c.table_name, c.ordinal_position
"""


def plain_dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


async def rows_referencing(
    dsn: str, value: str, *, skip_tables: frozenset[str] = frozenset()
) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table in ``public`` whose id/text column equals ``value`` or whose JSON
    column mentions it: ``{"table.column": [row, ...]}`` (tables found at run time, like ``\\dt``)."""
    found: dict[str, list[dict[str, Any]]] = {}
    conn = await asyncpg.connect(plain_dsn(dsn))
    try:
        for table, column, data_type in await conn.fetch(_COLUMNS):
            if table in skip_tables:
                continue
            if data_type in ("jsonb", "json"):
                condition = f'strpos("{column}"::text, $1) > 0'
            else:
                condition = f'"{column}"::text = $1'
            rows = await conn.fetch(f'SELECT * FROM "{table}" WHERE {condition}', value)
            if rows:
                found[f"{table}.{column}"] = [dict(r) for r in rows]
    finally:
        await conn.close()
    return found


async def fetch(dsn: str, query: str, *args: Any) -> list[dict[str, Any]]:
    conn = await asyncpg.connect(plain_dsn(dsn))
    try:
        return [dict(r) for r in await conn.fetch(query, *args)]
    finally:
        await conn.close()


async def sync_on_nudges(
    device: Device, socket: NudgeSocket, *, until: Callable[[], Any], timeout: float = 120.0
) -> None:
    """Behave like a client that syncs only when nudged, until ``until()`` (async) holds after a sync.

    Every change to the user's stream must produce a ``bookmarks_changed`` (bursts may coalesce, never
    vanish), so a change made after the socket opened cannot stay invisible to this loop: a missing
    nudge ends it with a timeout.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        remaining = deadline - loop.time()
        assert remaining > 0, "the change did not reach the device through nudge-triggered delta syncs"
        message = await socket.next(timeout=remaining)
        assert message == {"type": "bookmarks_changed"}, f"unexpected message on /v1/events: {message!r}"
        await device.sync()
        if await until():
            return
