"""The internal anti-entropy routes (decision 0131): digests of live bookmarks only, and re-publishing
exactly the ids asked for with their current state, changing nothing else."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

BASE = "/internal/anti-entropy/bookmark-urls"


@pytest.fixture(scope="module")
async def db(infra: Any) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(infra.dsn("bookmarks"))
    yield engine
    await engine.dispose()


async def rows(db: AsyncEngine, sql: str, **params: Any) -> list[dict[str, Any]]:
    async with db.connect() as conn:
        return [dict(r) for r in (await conn.execute(text(sql), params)).mappings()]


async def library(http: httpx.AsyncClient, user: Any) -> None:
    for n in (1, 2, 3):
        response = await http.put(f"/v1/bookmarks/b{n}", json={"url": f"https://ae.example/{n}"}, headers=user.headers)
        assert response.status_code in (200, 201), response.text
    assert (await http.delete("/v1/bookmarks/b3", headers=user.headers)).status_code == 204


async def test_digests_count_live_bookmarks_only(http: httpx.AsyncClient, user: Any) -> None:
    await library(http, user)
    after = uuid.UUID(int=user.id.int - 1)
    response = await http.post(f"{BASE}/digests", json={"after": str(after), "limit": 1})
    assert response.status_code == 200, response.text
    page = response.json()
    assert [u["userId"] for u in page["users"]] == [str(user.id)]
    assert sum(count for count, _ in page["users"][0]["buckets"].values()) == 2

    buckets = [int(b) for b in page["users"][0]["buckets"]]
    records = await http.post(f"{BASE}/records", json={"userId": str(user.id), "buckets": buckets})
    assert sorted(records.json()["hashes"]) == ["b1", "b2"]


async def test_republish_writes_the_current_state_of_exactly_those_ids(
    http: httpx.AsyncClient, user: Any, db: AsyncEngine
) -> None:
    await library(http, user)
    before = await rows(db, "SELECT client_bookmark_id, updated_at FROM bookmarks WHERE owner_uid = :u", u=user.id)
    stream = await rows(db, "SELECT last_position FROM user_streams WHERE owner_uid = :u", u=user.id)
    last = (await rows(db, "SELECT coalesce(max(id), 0) AS id FROM outbox"))[0]["id"]

    body = {"userId": str(user.id), "ids": ["b1", "b3", "never"]}
    response = await http.post(f"{BASE}/republish", json=body)
    assert response.json() == {"republished": 3}

    events = await rows(
        db, "SELECT topic, payload FROM outbox WHERE key = :k AND id > :a ORDER BY id", k=str(user.id), a=last
    )
    by_id = {e["payload"]["clientBookmarkId"]: e for e in events}
    assert sorted(by_id) == ["b1", "b3", "never"]
    saved = by_id["b1"]
    assert saved["topic"] == "bookmark.saved" and saved["payload"]["revived"] is None
    assert saved["payload"]["normalizedUrl"] == "https://ae.example/1"
    assert by_id["b3"]["topic"] == "bookmark.deleted"
    assert by_id["never"]["topic"] == "bookmark.deleted" and by_id["never"]["payload"]["normalizedUrl"] is None
    # nothing else changed: no row, no position
    assert (
        await rows(db, "SELECT client_bookmark_id, updated_at FROM bookmarks WHERE owner_uid = :u", u=user.id) == before
    )
    assert await rows(db, "SELECT last_position FROM user_streams WHERE owner_uid = :u", u=user.id) == stream


async def test_a_deleted_user_gets_nothing_republished(http: httpx.AsyncClient, user: Any, db: AsyncEngine) -> None:
    async with db.begin() as conn:
        await conn.execute(text("INSERT INTO deleted_users (owner_uid, deleted_at) VALUES (:u, now())"), {"u": user.id})
    response = await http.post(f"{BASE}/republish", json={"userId": str(user.id), "ids": ["b1"]})
    assert response.json() == {"republished": 0}


async def test_requests_are_bounded(http: httpx.AsyncClient, user: Any) -> None:
    too_many = {"userId": str(user.id), "ids": [f"b{n}" for n in range(1001)]}
    response = await http.post(f"{BASE}/republish", json=too_many)
    assert 400 <= response.status_code < 500
