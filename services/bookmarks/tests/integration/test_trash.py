"""The trash (docs/api-guide.md, section 14): deleted bookmarks listed, restored as they were (one, or
all since a time), purged one by one, emptied, and purged by the retention job; only the caller's."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from bookmarks.main import create_app
from bookmarks.settings import Settings
from bookmarks.trash import service as trash_service
from common.db import create_session_factory


async def put(http: httpx.AsyncClient, user: Any, bid: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await http.put(f"/v1/bookmarks/{bid}", json=body, headers=user.headers)
    assert response.status_code == 200, response.text
    return dict(response.json()["data"])


async def delete(http: httpx.AsyncClient, user: Any, bid: str) -> None:
    assert (await http.delete(f"/v1/bookmarks/{bid}", headers=user.headers)).status_code == 204


async def trash(http: httpx.AsyncClient, user: Any, **params: Any) -> dict[str, Any]:
    response = await http.get("/v1/trash", params=params, headers=user.headers)
    assert response.status_code == 200, response.text
    return dict(response.json()["data"])


async def restore(http: httpx.AsyncClient, user: Any, bid: str) -> httpx.Response:
    return await http.post(f"/v1/trash/{bid}/restore", headers=user.headers)


FULL = {
    "url": "https://example.com/keep?id=1",
    "title": "Worth keeping",
    "description": "A page I meant to read.",
    "notes": "my notes",
    "userTags": ["later", "reading"],
    "isFavorite": True,
}


async def test_a_deleted_bookmark_is_listed_and_restored_exactly_as_it_was(
    http: httpx.AsyncClient, user: Any, sync: Callable[..., Awaitable[Any]], bookmarks_settings: Settings
) -> None:
    before = await put(http, user, "kept", FULL)
    await delete(http, user, "kept")
    _, tombstones, cursor = await sync(user)
    assert "kept" in tombstones  # the delete is what the service spec says: a tombstone for every device

    listed = await trash(http, user)
    (item,) = listed["items"]
    assert item["bookmark"] == {**before, "updatedAt": item["bookmark"]["updatedAt"]}
    assert item["deletedAt"] == tombstones["kept"]
    deleted_at = datetime.fromisoformat(item["deletedAt"].replace("Z", "+00:00"))
    assert datetime.fromisoformat(item["purgeAt"].replace("Z", "+00:00")) - deleted_at == timedelta(days=30)
    assert item["mergedInto"] is None and listed["nextCursor"] is None

    restored = await restore(http, user, "kept")
    assert restored.status_code == 200, restored.text
    back = restored.json()["data"]
    assert {k: v for k, v in back.items() if k != "updatedAt"} == {k: v for k, v in before.items() if k != "updatedAt"}
    assert back["updatedAt"] > before["updatedAt"]
    live, tombstones, _ = await sync(user, cursor)  # devices see an ordinary upsert after their cursor
    assert live["kept"] == back and "kept" not in tombstones
    assert (await trash(http, user))["items"] == []
    again = await restore(http, user, "kept")
    assert again.status_code == 404 and again.json()["code"] == "not-found"


async def test_what_is_not_in_the_trash_cannot_be_restored(http: httpx.AsyncClient, user: Any, make_user: Any) -> None:
    await put(http, user, "live", {"url": "https://example.com/live"})
    await delete(http, user, "never-existed")  # a tombstone with no state: nothing to bring back
    other = make_user()
    await put(http, other, "theirs", {"url": "https://example.com/theirs"})
    await delete(http, other, "theirs")
    await put(http, user, "revived", {"url": "https://example.com/revived"})
    await delete(http, user, "revived")
    await put(http, user, "revived", {"url": "https://example.com/revived", "title": "back by a PUT"})
    for bid in ("live", "never-existed", "theirs", "revived", "unknown"):
        response = await restore(http, user, bid)
        assert response.status_code == 404, bid
        assert response.json()["code"] == "not-found"
    assert [i["bookmark"]["clientBookmarkId"] for i in (await trash(http, other))["items"]] == ["theirs"]
    assert (await trash(http, user))["items"] == []


async def test_the_trash_pages_newest_deletion_first(http: httpx.AsyncClient, user: Any, make_user: Any) -> None:
    for n in range(5):
        await put(http, user, f"page-{n}", {"url": f"https://example.com/{n}"})
        await delete(http, user, f"page-{n}")
    first = await trash(http, user, limit=2)
    assert [i["bookmark"]["clientBookmarkId"] for i in first["items"]] == ["page-4", "page-3"]
    second = await trash(http, user, limit=2, cursor=first["nextCursor"])
    third = await trash(http, user, limit=2, cursor=second["nextCursor"])
    assert [i["bookmark"]["clientBookmarkId"] for i in second["items"] + third["items"]] == [
        "page-2",
        "page-1",
        "page-0",
    ]
    assert third["nextCursor"] is None
    stolen = await http.get("/v1/trash", params={"cursor": first["nextCursor"]}, headers=make_user().headers)
    assert stolen.status_code == 400 and stolen.json()["code"] == "invalid-cursor"
    for bad in ({"limit": 0}, {"limit": 101}, {"cursor": "x" * 600}):
        response = await http.get("/v1/trash", params=bad, headers=user.headers)
        assert response.status_code == 400, bad


async def test_restore_since_undoes_a_mass_delete_and_nothing_older(
    http: httpx.AsyncClient, user: Any, sync: Callable[..., Awaitable[Any]]
) -> None:
    await put(http, user, "old", {"url": "https://example.com/old"})
    await delete(http, user, "old")
    await asyncio.sleep(0.01)
    since = datetime.now(UTC)
    for n in range(30):
        await put(http, user, f"mass-{n}", {"url": f"https://example.com/mass/{n}", "title": f"T{n}"})
    _, _, cursor = await sync(user)
    for n in range(30):
        await delete(http, user, f"mass-{n}")

    response = await http.post("/v1/trash/restore", json={"deletedSince": since.isoformat()}, headers=user.headers)
    assert response.status_code == 200, response.text
    assert response.json() == {"data": {"restored": 30}}
    live, tombstones, _ = await sync(user, cursor)
    assert {f"mass-{n}" for n in range(30)} <= set(live) and not any(t.startswith("mass-") for t in tombstones)
    assert live["mass-7"]["title"] == "T7"
    assert [i["bookmark"]["clientBookmarkId"] for i in (await trash(http, user))["items"]] == ["old"]

    for body in (
        {},
        {"deletedSince": 1700000000},
        {"deletedSince": "yesterday"},
        {"deletedSince": since.isoformat(), "x": 1},
    ):
        refused = await http.post("/v1/trash/restore", json=body, headers=user.headers)
        assert refused.status_code == 400, body
        assert refused.json()["code"] == "invalid-request"


async def test_purge_one_and_empty_are_final_and_idempotent(
    http: httpx.AsyncClient, user: Any, bookmarks_settings: Settings
) -> None:
    for bid in ("a", "b", "c"):
        await put(http, user, bid, {"url": f"https://example.com/{bid}", "title": f"secret {bid}"})
        await delete(http, user, bid)
    for _ in range(2):
        assert (await http.delete("/v1/trash/a", headers=user.headers)).status_code == 204
    assert [i["bookmark"]["clientBookmarkId"] for i in (await trash(http, user))["items"]] == ["c", "b"]
    assert (await restore(http, user, "a")).status_code == 404
    for _ in range(2):
        assert (await http.delete("/v1/trash", headers=user.headers)).status_code == 204
    assert (await trash(http, user))["items"] == []
    engine = create_async_engine(bookmarks_settings.database_url)
    try:
        async with engine.connect() as conn:
            rows = (
                (
                    await conn.execute(
                        text(
                            "SELECT url, title, deleted_at IS NOT NULL AS dead, search_vector::text AS sv FROM bookmarks WHERE owner_uid = :o"
                        ),
                        {"o": user.id},
                    )
                )
                .mappings()
                .all()
            )
    finally:
        await engine.dispose()
    assert len(rows) == 3 and all(r["dead"] and r["url"] == "" and r["title"] is None and r["sv"] == "" for r in rows)


async def test_the_retention_purge_drops_only_what_expired(
    http: httpx.AsyncClient, user: Any, bookmarks_settings: Settings
) -> None:
    for bid in ("expired", "recent"):
        await put(http, user, bid, {"url": f"https://example.com/{bid}"})
        await delete(http, user, bid)
    engine = create_async_engine(bookmarks_settings.database_url)
    try:
        async with engine.begin() as conn:  # as if deleted 31 days ago
            await conn.execute(
                text(
                    "UPDATE bookmarks SET deleted_at = deleted_at - interval '31 days' WHERE owner_uid = :o AND client_bookmark_id = 'expired'"
                ),
                {"o": user.id},
            )
        sessions = create_session_factory(engine)
        assert (await restore(http, user, "expired")).status_code == 404  # past retention: already not restorable
        purged = await trash_service.purge_expired(sessions=sessions, retention=timedelta(days=30))
        assert purged >= 1
        assert await trash_service.purge_expired(sessions=sessions, retention=timedelta(days=30)) == 0  # idempotent
        async with engine.connect() as conn:
            urls = dict(
                (
                    await conn.execute(
                        text("SELECT client_bookmark_id, url FROM bookmarks WHERE owner_uid = :o"), {"o": user.id}
                    )
                ).all()
            )
    finally:
        await engine.dispose()
    assert urls == {"expired": "", "recent": "https://example.com/recent"}
    assert [i["bookmark"]["clientBookmarkId"] for i in (await trash(http, user))["items"]] == ["recent"]


async def test_the_purge_loop_runs_in_the_service(bookmarks_settings: Settings, make_user: Any, infra: Any) -> None:
    """TRASH_PURGE_INTERVAL_SECONDS drives a loop in the service process; 0 turns it off."""
    settings = bookmarks_settings.model_copy(
        update={"trash_purge_interval_seconds": 0.2, "trash_retention_days": 0.00001}
    )
    app = create_app(settings, consumer_group=f"bookmarks-{uuid.uuid4()}")
    from asgi_lifespan import LifespanManager

    user = make_user()
    async with LifespanManager(app, startup_timeout=60, shutdown_timeout=60):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://b.test") as client:
            await put(client, user, "soon-gone", {"url": "https://example.com/soon"})
            await delete(client, user, "soon-gone")
            engine = create_async_engine(bookmarks_settings.database_url)
            try:
                for _ in range(100):
                    async with engine.connect() as conn:
                        url = (
                            await conn.execute(text("SELECT url FROM bookmarks WHERE owner_uid = :o"), {"o": user.id})
                        ).scalar_one()
                    if url == "":
                        break
                    await asyncio.sleep(0.1)
            finally:
                await engine.dispose()
    assert url == ""


@pytest.mark.parametrize("path", ["/v1/trash", "/v1/trash/x/restore"])
async def test_the_trash_needs_a_token(http: httpx.AsyncClient, path: str) -> None:
    response = await (http.get(path) if path == "/v1/trash" else http.post(path))
    assert response.status_code == 401


async def test_an_account_merge_moves_the_trash_and_a_deletion_removes_it(
    http: httpx.AsyncClient, make_user: Any, publish: Callable[[Any], Awaitable[None]]
) -> None:
    from common.events import UserDeleted, UserMerged
    from devstack.testing import eventually

    anon, owner = make_user(), make_user()
    await put(http, anon, "anon-trashed", {"url": "https://example.com/anon", "title": "From the phone"})
    await delete(http, anon, "anon-trashed")
    await publish(UserMerged(userId=owner.id, sourceUserId=anon.id))

    async def moved() -> list[Any] | None:
        items = (await trash(http, owner))["items"]
        return items or None

    (item,) = await eventually(moved)
    assert item["bookmark"]["title"] == "From the phone" and item["bookmark"]["ownerUid"] == str(owner.id)
    assert (await restore(http, owner, "anon-trashed")).status_code == 200
    await delete(http, owner, "anon-trashed")

    await publish(UserDeleted(userId=owner.id))

    async def gone() -> bool:
        return (await http.get("/v1/trash", headers=owner.headers)).status_code in (401, 403, 410) or not (
            await trash(http, owner)
        )["items"]

    assert await eventually(gone)
