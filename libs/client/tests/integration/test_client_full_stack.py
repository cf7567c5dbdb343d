"""The reference client against the whole platform (``full_stack``: every service as a process).

Nothing here measures time: effects that travel through the broker are awaited with ``eventually``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_support import DEADLINE_SECONDS, Output, cli, until

from bookmark_client import ApiError, Bookmark, BookmarkClient, Collection, Offline, SessionExpired
from devstack.testing import LocalJwksServer, eventually, free_port

pytestmark = pytest.mark.e2e


def live(bookmarks: list[Bookmark]) -> dict[str, tuple[Any, ...]]:
    """What must agree across devices: the client fields and the server's updatedAt of each live bookmark."""
    return {
        b.client_bookmark_id: (b.url, b.title, b.is_favorite, b.notes, tuple(b.collection_ids), b.updated_at)
        for b in bookmarks
        if not b.deleted
    }


def identity(idp: LocalJwksServer, sub: str) -> str:
    return idp.mint(sub=sub, claims={"name": "Dana Device", "email": f"{sub}@example.test"})


async def test_offline_device_and_online_device_converge(stack: Any, idp_a: LocalJwksServer, tmp_path: Path) -> None:
    gateway = stack.gateway_url
    sub = f"dana-{uuid.uuid4().hex}"
    a_path, b_path = tmp_path / "device-a.sqlite", tmp_path / "device-b.sqlite"

    # Both devices sign in with the same identity: one user, two independent sessions.
    a = await BookmarkClient(gateway, store_path=a_path).open()
    b = await BookmarkClient(gateway, store_path=b_path).open()
    try:
        user_a = await a.sign_in_with_idp_a(identity(idp_a, sub))
        user_b = await b.sign_in_with_idp_a(identity(idp_a, sub))
        assert user_a.id == user_b.id and not user_a.is_anonymous and user_a.display_name == "Dana Device"

        for n in (1, 2, 3):
            await a.put_bookmark(f"bm{n}", {"url": f"https://example.com/article/{n}", "title": f"Article {n}"})
        first = await a.flush()
        assert first.sent == 3 and first.rejected == []
        await b.sync()
        assert set(live(await b.list_bookmarks())) == {"bm1", "bm2", "bm3"}
    finally:
        await a.close()

    # Device A goes offline: same profile, unreachable server. Its writes apply locally and queue up.
    async with BookmarkClient(f"http://127.0.0.1:{free_port()}", store_path=a_path) as a_offline:
        await a_offline.put_bookmark("bm1", {"title": "A offline title"})
        await a_offline.delete_bookmark("bm2")
        await a_offline.put_bookmark("bm3", {"notes": "A offline notes"})
        await a_offline.set_collections("bm1", ["col-a"])
        with pytest.raises(Offline):
            await a_offline.flush(max_retries=0)
        assert [(op.kind, op.bookmark_id) for op in await a_offline.pending_operations()] == [
            ("put", "bm1"),
            ("delete", "bm2"),
            ("put", "bm3"),
            ("collections", "bm1"),
        ]

    # Meanwhile device B edits the same bookmarks online, and listens for nudges.
    nudges = 0
    changed: list[str] = []
    connected = asyncio.Event()

    def on_nudge() -> None:
        nonlocal nudges
        nudges += 1

    watch = asyncio.create_task(b.watch(changed.extend, on_nudge=on_nudge, on_connect=connected.set))
    a = BookmarkClient(gateway, store_path=a_path)
    try:
        await asyncio.wait_for(connected.wait(), 60)
        await b.put_bookmark("bm1", {"title": "B title", "isFavorite": True})
        await b.put_bookmark("bm2", {"notes": "B notes"})
        await b.delete_bookmark("bm3")
        await b.put_bookmark("probe", {"url": "https://example.com/probe"})
        # The watch's catch-up after connecting may send some of these before this flush does.
        flushed_b = await b.flush()
        assert flushed_b.rejected == [] and flushed_b.remaining == 0
        assert await b.pending_operations() == []
        # B's own writes nudge B too: the subscription is live before A comes back.
        await eventually(lambda: _async(nudges >= 1), timeout=60)

        # A comes online. A sync before flushing must not lose its queued edits to B's older copies...
        await a.open()
        await a.sync()
        bm1, bm2, bm3 = [await a.get_bookmark(i) for i in ("bm1", "bm2", "bm3")]
        assert bm1 is not None and bm1.title == "A offline title" and bm1.collection_ids == ["col-a"]
        assert bm1.is_favorite is True  # not edited on A: B's value is taken
        assert bm2 is not None and bm2.deleted
        assert bm3 is not None and not bm3.deleted and bm3.notes == "A offline notes"

        # ...then it flushes: its writes arrive last, so they win on the server (last-write-wins).
        nudges_before_flush = nudges
        changed.clear()
        flushed = await a.flush()
        assert flushed.sent == 4 and flushed.rejected == [] and flushed.sync is not None
        assert await a.pending_operations() == []

        # B is nudged and syncs by itself.
        await eventually(lambda: _async(nudges > nudges_before_flush), timeout=60)
        await eventually(lambda: _async({"bm1", "bm2", "bm3"} <= set(changed)), timeout=60)
    finally:
        watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watch

    try:
        await b.sync()
        # The server's state, as a fresh third device sees it from scratch.
        async with BookmarkClient(gateway, store_path=tmp_path / "device-c.sqlite") as c:
            await c.sign_in_with_idp_a(identity(idp_a, sub))
            await c.sync()
            server_state = live(await c.list_bookmarks())

        assert live(await a.list_bookmarks()) == server_state
        assert live(await b.list_bookmarks()) == server_state
        expected = {
            "bm1": ("https://example.com/article/1", "A offline title", True, None, ("col-a",)),
            "bm3": ("https://example.com/article/3", "Article 3", False, "A offline notes", ()),
            "probe": ("https://example.com/probe", None, False, None, ()),
        }
        assert {k: v[:5] for k, v in server_state.items()} == expected  # bm2: B's edit, then A's delete
        for device in (a, b):
            bm2 = await device.get_bookmark("bm2")
            assert bm2 is not None and bm2.deleted
    finally:
        await a.close()
        await b.close()


async def _async(value: bool) -> bool:
    return value


Library = tuple[dict[str, tuple[Any, ...]], dict[str, tuple[Any, ...]]]


async def library(device: BookmarkClient) -> Library:
    """What must agree across devices (docs/api-guide.md, section 11): the library fields of each live bookmark
    and each live collection, with the server's updatedAt."""
    bookmarks: list[Bookmark] = await device.list_bookmarks()
    collections: list[Collection] = await device.list_collections()
    return (
        {
            b.client_bookmark_id: (b.url, tuple(b.user_tags), b.is_archived, tuple(b.collection_ids), b.updated_at)
            for b in bookmarks
            if not b.deleted
        },
        {c.id: (c.name, c.parent_id, c.updated_at) for c in collections if not c.deleted},
    )


async def test_library_with_collections_tags_and_archive_converges(
    stack: Any, idp_a: LocalJwksServer, tmp_path: Path
) -> None:
    gateway, sub = stack.gateway_url, f"lib-{uuid.uuid4().hex}"
    a_path, b_path = tmp_path / "device-a.sqlite", tmp_path / "device-b.sqlite"
    a = await BookmarkClient(gateway, store_path=a_path).open()
    b = await BookmarkClient(gateway, store_path=b_path).open()
    try:
        await a.sign_in_with_idp_a(identity(idp_a, sub))
        await b.sign_in_with_idp_a(identity(idp_a, sub))
        await a.put_collection("reading", {"name": "Reading"})
        await a.put_bookmark("bm1", {"url": "https://example.com/lib/1", "userTags": ["Python", "Sync"]})
        assert (await a.flush()).rejected == []
        await b.sync()
        assert await library(b) == await library(a)
    finally:
        await a.close()

    # Device A offline: a collection and a bookmark filed into it, in both queue orders, plus tags,
    # archive state and a rename.
    async with BookmarkClient(f"http://127.0.0.1:{free_port()}", store_path=a_path) as a_offline:
        await a_offline.put_collection("deep", {"name": "Deep dives", "parentId": "reading"})
        await a_offline.put_bookmark("bm2", {"url": "https://example.com/lib/2", "collectionIds": ["deep"]})
        await a_offline.put_bookmark("bm3", {"url": "https://example.com/lib/3", "collectionIds": ["later"]})
        await a_offline.put_collection("later", {"name": "Later"})
        await a_offline.tag_bookmark("bm1", add=["offline"], remove=["sync"])
        await a_offline.archive_bookmark("bm1")
        await a_offline.put_collection("reading", {"name": "To read"})
        with pytest.raises(Offline):
            await a_offline.flush(max_retries=0)
        assert len(await a_offline.pending_operations()) == 7

    # Meanwhile device B files bm1 into a collection of its own and favorites it.
    await b.put_collection("b-col", {"name": "From B"})
    await b.set_collections("bm1", ["b-col"])
    await b.put_bookmark("bm1", {"isFavorite": True})
    assert (await b.flush()).rejected == []

    a = await BookmarkClient(gateway, store_path=a_path).open()
    try:
        # Back online, A syncs before flushing: its queued edits stay visible over B's newer copies...
        await a.sync()
        bm1, deep = await a.get_bookmark("bm1"), await a.get_collection("deep")
        assert bm1 is not None and bm1.user_tags == ["Python", "offline"] and bm1.is_archived
        assert bm1.collection_ids == ["b-col"] and bm1.is_favorite  # not edited on A: B's values
        assert deep is not None and deep.pending and deep.parent_id == "reading"
        reading = await a.get_collection("reading")
        assert reading is not None and reading.name == "To read"

        # ...then flushes: every write is accepted, unknown collection ids on bookmarks included.
        flushed = await a.flush()
        assert flushed.sent == 7 and flushed.rejected == [] and await a.pending_operations() == []
        await b.sync()
        async with BookmarkClient(gateway, store_path=tmp_path / "device-c.sqlite") as c:
            await c.sign_in_with_idp_a(identity(idp_a, sub))
            await c.sync()
            server_state = await library(c)
        assert await library(a) == server_state and await library(b) == server_state
        bookmarks, collections = server_state
        assert {k: v[:4] for k, v in bookmarks.items()} == {
            "bm1": ("https://example.com/lib/1", ("Python", "offline"), True, ("b-col",)),
            "bm2": ("https://example.com/lib/2", (), False, ("deep",)),
            "bm3": ("https://example.com/lib/3", (), False, ("later",)),
        }
        assert {k: v[:2] for k, v in collections.items()} == {
            "reading": ("To read", None),
            "deep": ("Deep dives", "reading"),
            "later": ("Later", None),
            "b-col": ("From B", None),
        }

        # B deletes a parent collection while A listens: A is nudged and syncs by itself; the child moves
        # up and every device's bookmarks lose the id.
        await b.set_collections("bm2", ["deep", "reading"])
        assert (await b.flush()).rejected == []
        changed_collections: list[str] = []
        connected = asyncio.Event()
        watch = asyncio.create_task(a.watch(on_collection_change=changed_collections.extend, on_connect=connected.set))
        try:
            await asyncio.wait_for(connected.wait(), 60)
            await b.delete_collection("reading")
            assert (await b.flush()).rejected == []

            async def unfiled() -> bool:
                bm2 = await a.get_bookmark("bm2")
                return "reading" in changed_collections and bm2 is not None and bm2.collection_ids == ["deep"]

            await eventually(unfiled, timeout=60)
        finally:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch
        deep = await a.get_collection("deep")
        assert deep is not None and deep.parent_id is None
        await a.sync()
        assert await library(a) == await library(b)
        assert "reading" not in (await library(a))[1]
    finally:
        await a.close()
        await b.close()


async def test_concurrent_requests_share_one_refresh(stack: Any, tmp_path: Path) -> None:
    async with BookmarkClient(stack.gateway_url, store_path=tmp_path / "p.sqlite") as client:
        await client.sign_in_anonymously()
        await client.put_bookmark("x", {"url": "https://example.com/x"})
        await client.flush()
        # Make the stored access token unusable (as an expired one would be), here and on disk.
        session = client._sessions.session
        assert session is not None
        await client._sessions.adopt(session.model_copy(update={"access_token": "not-a-jwt"}), keep_queue=True)

        syncs = asyncio.gather(*(client.sync() for _ in range(3)))
        _, me, settings = await asyncio.gather(syncs, client.me(), client.get_settings())

        assert client.refresh_count == 1
        assert me.id == session.user.id and settings.use_ai is False
        # Had two refreshes used the same token, reuse detection would have revoked the family by now.
        await client.refresh_session()
        assert (await client.me()).id == session.user.id


async def test_reused_refresh_token_ends_the_session(stack: Any, tmp_path: Path) -> None:
    original, copy = tmp_path / "original.sqlite", tmp_path / "copy.sqlite"
    async with BookmarkClient(stack.gateway_url, store_path=original) as client:
        await client.sign_in_anonymously()
    shutil.copy(original, copy)  # a cloned profile: same refresh token in two places

    async with (
        BookmarkClient(stack.gateway_url, store_path=original) as first,
        BookmarkClient(stack.gateway_url, store_path=copy) as clone,
    ):
        await first.refresh_session()
        with pytest.raises(SessionExpired):
            await clone.refresh_session()  # reuse: refused, and the whole family is revoked
        assert clone.user is None
        with pytest.raises(SessionExpired):
            await first.refresh_session()


async def test_logout_revokes_the_refresh_token(stack: Any, tmp_path: Path) -> None:
    async with BookmarkClient(stack.gateway_url, store_path=tmp_path / "p.sqlite") as client:
        await client.sign_in_anonymously()
        session = client._sessions.session
        assert session is not None
        assert await client.logout() is True
        assert client.user is None
    async with httpx.AsyncClient(base_url=stack.gateway_url) as http:
        response = await http.post("/v1/auth/refresh", json={"refreshToken": session.refresh_token})
    assert response.status_code == 401 and response.json()["code"] == "invalid-refresh-token"


PAGE = b"""<!doctype html><html lang="en"><head>
<title>Tidal Gardens of the North Sea</title>
<meta name="description" content="How coastal communities cultivate seaweed in tidal pools.">
<meta property="og:image" content="/img/seaweed.png">
</head><body><article><h1>Tidal Gardens</h1>
<p>Along the North Sea coast, families have farmed seaweed in tidal pools for generations. The kelp grows
quickly in cold, nutrient-rich water and is harvested by hand at low tide.</p>
<p>Today researchers study these gardens as a model for sustainable aquaculture, carbon capture and
coastal protection, while chefs prize the harvest for its flavour.</p></article></body></html>"""


PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@pytest.fixture
def site() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's API
            # The page's image is a real PNG: the worker keeps a thumbnail only when it fetches an image.
            body, kind = (PNG, "image/png") if self.path.startswith("/img/") else (PAGE, "text/html; charset=utf-8")
            self.send_response(200)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def test_enrichment_round_trip(stack: Any, site: str, tmp_path: Path) -> None:
    async with BookmarkClient(stack.gateway_url, store_path=tmp_path / "p.sqlite") as client:
        await client.sign_in_anonymously()
        url = f"{site}/articles/tidal-gardens-{uuid.uuid4().hex}"
        await client.put_bookmark("tidal", {"url": url, "title": "my note to self"})
        await client.flush()

        assert (await client.get_settings()).use_ai is False  # consent is opt-in
        with pytest.raises(ApiError) as refused:
            await client.enrich("tidal")
        assert (refused.value.status, refused.value.code) == (403, "consent-required")
        assert (await client.update_settings(use_ai=True)).use_ai is True

        queued = await client.enrich("tidal")
        assert queued.status in ("pending", "processing", "completed")

        async def finished() -> Any:
            job = await client.enrichment_status("tidal")
            return job if job.finished else None

        job = await eventually(finished, timeout=120, interval=0.2)
        assert job.status == "completed", job
        assert job.result is not None and job.result.title == "Tidal Gardens of the North Sea"
        assert job.result.save_why is None  # Pro-gated

        async def enriched_locally() -> Bookmark | None:
            await client.sync()
            bookmark = await client.get_bookmark("tidal")
            return bookmark if bookmark is not None and bookmark.enrichment_status == "completed" else None

        bookmark = await eventually(enriched_locally, timeout=60, interval=0.2)
        assert bookmark.title == "Tidal Gardens of the North Sea"  # server-authoritative once enriched
        assert bookmark.tags and bookmark.summary and bookmark.enriched_at
        # The page's picture as the platform re-encoded it, served from the platform itself.
        assert re.fullmatch(r"/v1/previews/images/[0-9a-f]{64}\.webp", bookmark.thumbnail_url or ""), bookmark


def test_cli_session(stack: Any, tmp_path: Path) -> None:
    profile, server = tmp_path / "cli.sqlite", stack.gateway_url

    login = cli(profile, server, "login", "--anonymous")
    assert login.returncode == 0, login.stderr
    assert "signed in as" in login.stdout and "(anonymous)" in login.stdout

    added = cli(
        profile, server, "add", "https://example.com/cli", "--title", "From the CLI", "--id", "cli-1", "--favorite"
    )
    assert added.returncode == 0, added.stderr
    assert "added cli-1" in added.stdout

    listed = cli(profile, server, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    records = json.loads(listed.stdout)
    assert [(r["clientBookmarkId"], r["title"], r["isFavorite"], r["domain"]) for r in records] == [
        ("cli-1", "From the CLI", True, "example.com")
    ]
    table = cli(profile, server, "list")
    assert table.stdout.splitlines()[0].split() == [
        "ID",
        "TITLE",
        "DOMAIN",
        "TAGS",
        "AI-TAGS",
        "COLLECTIONS",
        "STATE",
        "ENRICHMENT",
        "LINK",
    ]

    created = cli(profile, server, "collections", "add", "cli-col", "From the CLI")
    assert created.returncode == 0 and created.stdout.strip() == "created collection cli-col: From the CLI"
    assert cli(profile, server, "file", "cli-1", "cli-col").stdout.strip() == "cli-1: in From the CLI"
    assert cli(profile, server, "tag", "cli-1", "mine", "Mine").stdout.strip() == "cli-1: tags mine"
    assert cli(profile, server, "archive", "cli-1").stdout.strip() == "archived cli-1"
    row = cli(profile, server, "list").stdout.splitlines()[1]
    assert "mine" in row and "From the CLI" in row and "archived" in row
    assert cli(profile, server, "collections").stdout.splitlines() == ["From the CLI  (cli-col, 1 bookmark)"]

    synced = cli(profile, server, "sync")
    assert synced.returncode == 0, synced.stderr
    assert synced.stdout.splitlines()[-1].startswith("synced 1 page(s)")

    assert cli(profile, server, "settings").stdout.strip() == "useAi: off"
    assert cli(profile, server, "settings", "--use-ai", "on").stdout.strip() == "useAi: on"

    refused = cli(profile, server, "add", "ftp://example.com/x")
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr

    out = cli(profile, server, "logout")
    assert out.returncode == 0 and out.stdout.strip() == "signed out"
    after = cli(profile, server, "sync")
    assert after.returncode == 4 and "not signed in" in after.stderr


def test_cli_watch_prints_changes_and_stops_on_ctrl_c(stack: Any, idp_a: LocalJwksServer, tmp_path: Path) -> None:
    server, sub = stack.gateway_url, f"cli-{uuid.uuid4().hex}"
    watcher, writer = tmp_path / "watcher.sqlite", tmp_path / "writer.sqlite"
    for profile in (watcher, writer):  # two devices of one user
        login = cli(profile, server, "login", "--idp-a-token", identity(idp_a, sub))
        assert login.returncode == 0, login.stderr

    watch = subprocess.Popen(
        [sys.executable, "-m", "bookmark_client", "--server", server, "--profile", str(watcher), "watch"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = Output(watch.stdout), Output(watch.stderr)
        until(lambda: out.has("connected"), "connecting", watch)
        added = cli(writer, server, "add", "https://example.com/watched", "--id", "watched-1", "--title", "Watched")
        assert added.returncode == 0, added.stderr
        until(lambda: out.has("nudge: bookmarks_changed"), "a nudge", watch)
        until(lambda: out.has("changed watched-1: Watched"), "the changed bookmark", watch)

        watch.send_signal(signal.SIGINT)  # Ctrl-C: the normal way out of watch
        assert watch.wait(timeout=DEADLINE_SECONDS) == 0
        assert out.text().endswith("stopped") and "Traceback" not in err.text(), (out.text(), err.text())
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
