"""The mass-delete drill: a device deletes 2,000 bookmarks of a library (filed in collections, one in ten
with a highlight) through one bulk call; `POST /v1/trash/restore {deletedSince}` brings every one back with
its highlights, and three devices (two browsers and the reference client) converge to exactly the library
they had before the delete."""

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
MARKED = range(0, COUNT + KEPT, 10)  # bookmarks with a highlight

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
HIGHLIGHT_STATE = """() => new Promise((resolve, reject) => {
    const open = indexedDB.open("bookmarks");
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
        const request = open.result.transaction("highlights").objectStore("highlights").getAll();
        request.onerror = () => reject(request.error);
        request.onsuccess = () => resolve(request.result.filter((h) => !h.deleted)
            .map((h) => [h.id, h.bookmarkId, h.quote, h.note]));
    };
})"""

State = set[tuple[str, str, str, bool]]
Marks = set[tuple[str, str, str, str]]


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
    marks = list(MARKED)

    async def marker() -> None:
        while marks:
            n = marks.pop()
            body = {"bookmarkId": f"drill-{n}", "quote": f"Passage {n}", "note": f"Why {n} matters"}
            response = await http.put(f"/v1/highlights/mark-{n}", json=body, headers=headers)
            assert response.status_code == 200, response.text

    await asyncio.gather(*(marker() for _ in range(8)))


async def _retrying(call: Any) -> httpx.Response:
    """The call, sent again after a 503 as every client does (the server's answer to a statement that ran
    out of time under load: nothing was changed, try again shortly)."""
    for _ in range(3):
        response: httpx.Response = await call()
        if response.status_code != 503:
            return response
        await asyncio.sleep(float(response.headers.get("Retry-After", "1")))
    return response


async def _browser_state(page: Any) -> State:
    return {tuple(item) for item in await page.evaluate(LIBRARY_STATE)}  # type: ignore[misc]


async def _browser_marks(page: Any) -> Marks:
    return {tuple(item) for item in await page.evaluate(HIGHLIGHT_STATE)}  # type: ignore[misc]


async def _client_marks(client: BookmarkClient) -> Marks:
    return {(h.id, h.bookmark_id, h.quote, h.note) for h in await client.list_highlights()}


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

        async def every_mark() -> list[Marks]:
            await client.sync()
            return [*[await _browser_marks(p) for p in browsers], await _client_marks(client)]

        async def marks_are(expected: int) -> list[Marks] | None:
            marks = await every_mark()
            return marks if all(len(m) == expected for m in marks) else None

        marks_before = (await eventually(lambda: marks_are(len(MARKED)), timeout=120))[0]
        assert all(m == marks_before for m in await every_mark())

        since = datetime.now(UTC).isoformat()
        response = await _retrying(
            lambda: http.post("/v1/bookmarks/bulk", json={"action": "delete", "query": "tag:doomed"}, headers=headers)
        )
        assert response.status_code == 200, response.text
        assert response.json()["data"]["affected"] == COUNT
        deleted = await eventually(lambda: converged_on(KEPT), timeout=180)
        assert all(
            {entry[0] for entry in state} == {f"drill-{n}" for n in range(COUNT, COUNT + KEPT)} for state in deleted
        )
        survivors = {m for m in marks_before if int(m[1].removeprefix("drill-")) >= COUNT}
        gone = await eventually(lambda: marks_are(len(survivors)), timeout=120)
        assert all(m == survivors for m in gone)

        restored = await _retrying(
            lambda: http.post("/v1/trash/restore", json={"deletedSince": since}, headers=headers)
        )
        assert restored.status_code == 200, restored.text
        assert restored.json() == {"data": {"restored": COUNT}}
        after = await eventually(lambda: converged_on(COUNT + KEPT), timeout=180)
        assert after[0] == after[1] == after[2] == before[0]

        back = await eventually(lambda: marks_are(len(MARKED)), timeout=120)
        assert back[0] == back[1] == back[2] == marks_before
        for page in browsers:
            await expect_status(page, "Synced")
