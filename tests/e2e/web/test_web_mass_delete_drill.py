"""The mass-delete drill: a device deletes 2,000 bookmarks of a library (filed in collections) through one
bulk call; `POST /v1/trash/restore {deletedSince}` brings every one back, and three devices (two browsers
and the reference client) converge to exactly the library they had before the delete."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from web_support import expect_status, open_library, seed_session

from bookmark_client import BookmarkClient
from devstack.testing import LocalJwksServer, eventually

COUNT = 2000
KEPT = 50  # not deleted: the drill must not touch them either

LIBRARY_STATE = """() => new Promise((resolve, reject) => {
    const open = indexedDB.open("bookmarks");
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
        const request = open.result.transaction("bookmarks").objectStore("bookmarks").getAll();
        request.onerror = () => reject(request.error);
        request.onsuccess = () => resolve(request.result.filter((b) => !b.deleted)
            .map((b) => [b.clientBookmarkId, b.title, (b.collectionIds || []).join(","), !!b.isFavorite]));
    };
})"""

State = set[tuple[str, str, str, bool]]


async def _session(http: httpx.AsyncClient, idp_a: LocalJwksServer, sub: str) -> dict[str, Any]:
    response = await http.post("/v1/auth/oauth/idp-a", json={"idToken": idp_a.mint(sub=sub)})
    assert response.status_code == 200, response.text
    session: dict[str, Any] = response.json()
    return session


async def _seed(http: httpx.AsyncClient, headers: dict[str, str]) -> None:
    for collection in ("reading", "recipes"):
        response = await http.put(f"/v1/collections/{collection}", json={"name": collection.title()}, headers=headers)
        assert response.status_code == 200, response.text
    queue = list(range(COUNT + KEPT))

    async def worker() -> None:
        while queue:
            n = queue.pop()
            body = {
                "url": f"https://drill.example/{n}",
                "title": f"Drill {n}",
                "collectionIds": ["reading"] if n % 2 else ["recipes", "reading"],
                "isFavorite": n % 7 == 0,
                "userTags": ["doomed"] if n < COUNT else ["kept"],
            }
            response = await http.put(f"/v1/bookmarks/drill-{n}", json=body, headers=headers)
            assert response.status_code == 200, response.text

    await asyncio.gather(*(worker() for _ in range(16)))


async def _browser_state(page: Any) -> State:
    return {tuple(item) for item in await page.evaluate(LIBRARY_STATE)}  # type: ignore[misc]


async def _client_state(client: BookmarkClient) -> State:
    await client.sync()
    return {
        (b.client_bookmark_id, b.title or "", ",".join(b.collection_ids), b.is_favorite)
        for b in await client.list_bookmarks()
    }


async def test_a_mass_delete_is_restored_and_three_devices_converge(
    new_device: Any, http: httpx.AsyncClient, idp_a: LocalJwksServer, tmp_path: Path
) -> None:
    sub = f"drill-{uuid.uuid4().hex}"
    session = await _session(http, idp_a, sub)
    headers = {"Authorization": f"Bearer {session['accessToken']}"}
    await _seed(http, headers)

    browsers = []
    for _ in range(2):
        page = await new_device(open_app=False)
        await seed_session(page, await _session(http, idp_a, sub))
        await open_library(page)
        browsers.append(page)
    async with BookmarkClient(str(http.base_url), store_path=tmp_path / "client.db") as client:
        await client.sign_in_with_idp_a(idp_a.mint(sub=sub))

        async def everyone() -> list[State]:
            return [*[await _browser_state(p) for p in browsers], await _client_state(client)]

        async def converged_on(expected: int) -> list[State] | None:
            states = await everyone()
            return states if all(len(s) == expected for s in states) else None

        before = await eventually(lambda: converged_on(COUNT + KEPT), timeout=180)
        assert before[0] == before[1] == before[2]

        since = datetime.now(UTC).isoformat()
        response = await http.post(
            "/v1/bookmarks/bulk", json={"action": "delete", "query": "tag:doomed"}, headers=headers
        )
        assert response.status_code == 200, response.text
        assert response.json()["data"]["affected"] == COUNT
        deleted = await eventually(lambda: converged_on(KEPT), timeout=180)
        assert all(
            {entry[0] for entry in state} == {f"drill-{n}" for n in range(COUNT, COUNT + KEPT)} for state in deleted
        )

        restored = await http.post("/v1/trash/restore", json={"deletedSince": since}, headers=headers)
        assert restored.status_code == 200, restored.text
        assert restored.json() == {"data": {"restored": COUNT}}
        after = await eventually(lambda: converged_on(COUNT + KEPT), timeout=180)
        assert after[0] == after[1] == after[2] == before[0]
        for page in browsers:
            await expect_status(page, "Synced")
