"""Races and crashes of the curation writes: a retention pass that dies between batches, a purge racing a
restore, a bulk change racing PUTs of the same bookmarks. Nothing is lost, nothing is half done, and a
device that synced before sees exactly the final state."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from bookmarks.settings import Settings
from bookmarks.trash import service as trash_service
from bookmarks.trash import store as trash_store
from common.db import create_session_factory


async def put(http: httpx.AsyncClient, user: Any, bid: str, body: dict[str, Any]) -> None:
    response = await http.put(f"/v1/bookmarks/{bid}", json=body, headers=user.headers)
    assert response.status_code == 200, response.text


async def in_parallel(calls: list[Any], workers: int = 16) -> None:
    queue = list(reversed(calls))

    async def worker() -> None:
        while queue:
            await queue.pop()()

    await asyncio.gather(*(worker() for _ in range(workers)))


async def _trashed(http: httpx.AsyncClient, user: Any, count: int) -> None:
    async def one(n: int) -> None:
        await put(http, user, f"t{n:02}", {"url": f"https://race.example/{n}", "title": f"T{n}"})
        assert (await http.delete(f"/v1/bookmarks/t{n:02}", headers=user.headers)).status_code == 204

    await in_parallel([lambda n=n: one(n) for n in range(count)])


async def _urls(engine: Any, user: Any) -> dict[str, str]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT client_bookmark_id, url FROM bookmarks WHERE owner_uid = :o"), {"o": user.id}
        )
        return dict(rows.all())  # type: ignore[arg-type]


async def test_a_retention_pass_that_dies_between_batches_leaves_whole_batches_and_the_next_finishes(
    http: httpx.AsyncClient, user: Any, bookmarks_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trash_service, "PURGE_BATCH", 10)
    await _trashed(http, user, 25)
    marked = await http.put("/v1/highlights/m1", json={"bookmarkId": "t00", "quote": "q"}, headers=user.headers)
    assert marked.status_code == 400  # a deleted bookmark takes no highlight
    engine = create_async_engine(bookmarks_settings.database_url)
    sessions = create_session_factory(engine)
    real_purge = trash_store.purge
    calls = 0

    async def dies_in_the_second_batch(session: Any, records: Any) -> None:
        nonlocal calls
        calls += 1
        await real_purge(session, records)
        if calls == 2:  # the second batch's rows are written, then the process dies before COMMIT
            raise RuntimeError("killed")

    try:
        async with engine.begin() as conn:  # everyone's trash expired, this user's included
            await conn.execute(
                text("UPDATE bookmarks SET deleted_at = deleted_at - interval '40 days' WHERE owner_uid = :o"),
                {"o": user.id},
            )
        monkeypatch.setattr(trash_store, "purge", dies_in_the_second_batch)
        with pytest.raises(RuntimeError, match="killed"):
            await trash_service.purge_expired(sessions=sessions, retention=timedelta(days=30))
        urls = await _urls(engine, user)
        purged = sorted(k for k, v in urls.items() if v == "")
        # Oldest deletions first across every user: this user's rows are purged in whole batches or not at all.
        assert len(urls) == 25 and len(purged) in (0, 10, 20)
        assert all(v == "" or v.startswith("https://race.example/") for v in urls.values())
        monkeypatch.setattr(trash_store, "purge", real_purge)
        await trash_service.purge_expired(sessions=sessions, retention=timedelta(days=30))
        assert set((await _urls(engine, user)).values()) == {""}
        assert await trash_service.purge_expired(sessions=sessions, retention=timedelta(days=30)) == 0
    finally:
        await engine.dispose()


async def test_emptying_the_trash_while_restoring_it_keeps_every_bookmark_whole(
    http: httpx.AsyncClient, user: Any, bookmarks_settings: Settings, sync_lib: Any
) -> None:
    await _trashed(http, user, 60)
    engine = create_async_engine(bookmarks_settings.database_url)
    sessions = create_session_factory(engine)
    try:
        restore = http.post("/v1/trash/restore", json={"deletedSince": "2000-01-01T00:00:00Z"}, headers=user.headers)
        emptied, restored = await asyncio.gather(trash_service.empty_trash(sessions=sessions, owner=user.id), restore)
        assert restored.status_code == 200, restored.text
        urls = await _urls(engine, user)
    finally:
        await engine.dispose()
    device = await sync_lib(user)
    # Each bookmark is either back with its whole state or purged, never both, never half.
    assert emptied + restored.json()["data"]["restored"] == 60
    assert set(device.bookmarks) == {k for k, v in urls.items() if v}
    assert all(b["url"].startswith("https://race.example/") and b["title"] for b in device.bookmarks.values())
    assert {k for k, v in urls.items() if not v} <= set(device.bookmark_tombstones)


async def test_a_bulk_change_racing_puts_of_the_same_bookmarks_loses_neither(
    http: httpx.AsyncClient, user: Any, sync_lib: Any
) -> None:
    ids = [f"b{n:03}" for n in range(150)]
    await in_parallel([lambda b=b: put(http, user, b, {"url": f"https://race.example/{b}"}) for b in ids])
    device = await sync_lib(user)
    bulk = http.post("/v1/bookmarks/bulk", json={"action": "favorite", "ids": ids}, headers=user.headers)
    edits = [lambda b=b: put(http, user, b, {"url": f"https://race.example/{b}", "title": f"Edited {b}"}) for b in ids]
    done, _ = await asyncio.gather(bulk, in_parallel(edits, workers=8))
    assert done.status_code == 200, done.text
    device = await sync_lib(user, device)
    assert all(device.bookmarks[b]["isFavorite"] and device.bookmarks[b]["title"] == f"Edited {b}" for b in ids)
    # Undo puts back the field it set and leaves the racing edits alone.
    undo = await http.post(
        "/v1/bookmarks/bulk/undo", json={"undoToken": done.json()["data"]["undoToken"]}, headers=user.headers
    )
    assert undo.status_code == 200, undo.text
    device = await sync_lib(user, device)
    fresh = await sync_lib(user)
    assert device.bookmarks == fresh.bookmarks
    assert all(not device.bookmarks[b]["isFavorite"] and device.bookmarks[b]["title"] == f"Edited {b}" for b in ids)
