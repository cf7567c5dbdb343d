"""Two browsers and the Python reference client as three devices of one account: changes travel
through nudges without a reload, offline edits queue (and survive a reload) and converge when the
network returns; pairing brings a second browser into the library."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
from playwright.async_api import expect
from web_support import add_link, expect_status, open_library, pair, row, save_link, seed_session, titles

from bookmark_client import BookmarkClient
from devstack.testing import LocalJwksServer, eventually


async def _idp_session(http: httpx.AsyncClient, idp_a: LocalJwksServer, sub: str) -> dict[str, Any]:
    response = await http.post("/v1/auth/oauth/idp-a", json={"idToken": idp_a.mint(sub=sub)})
    assert response.status_code == 200, response.text
    session: dict[str, Any] = response.json()
    return session


async def _browser_device(new_device: Any, session: dict[str, Any]) -> Any:
    page = await new_device(open_app=False)
    await seed_session(page, session)
    await open_library(page)
    return page


async def test_two_browsers_and_the_python_client_converge_after_offline_edits(
    new_device: Any, http: httpx.AsyncClient, idp_a: LocalJwksServer, tmp_path: Path
) -> None:
    # Browser A is signed in to an idp-a account (so the Python client can reach it too); browser B
    # joins it by pairing, as a person would.
    sub = f"web-{uuid.uuid4().hex}"
    a = await _browser_device(new_device, await _idp_session(http, idp_a, sub))
    b = await new_device()
    await pair(a, b)
    await expect_status(b, "Synced")
    async with BookmarkClient(http.base_url.__str__(), store_path=tmp_path / "client.db") as client:
        await client.sign_in_with_idp_a(idp_a.mint(sub=sub))

        # A change on one browser shows on the other without a reload (nudge → delta).
        await add_link(a, "https://devices.example/shared")
        await expect(row(b, "devices.example/shared")).to_have_count(1, timeout=20_000)
        await client.sync()
        shared = next(bm for bm in await client.list_bookmarks() if bm.url.endswith("/shared"))

        # Both browsers go offline and edit; the client edits online meanwhile.
        await a.context.set_offline(True)
        await b.context.set_offline(True)
        await expect_status(a, "Offline")
        await add_link(a, "https://devices.example/from-a")
        await add_link(b, "https://devices.example/from-b")
        await row(b, "devices.example/shared").get_by_role("button", name="Details").click()
        details = b.get_by_role("region", name="Bookmark details")
        await details.get_by_role("textbox", name="Title").fill("Renamed offline on B")
        await details.get_by_role("button", name="Close details").click()
        await expect_status(a, "1 change waiting")
        await expect_status(b, "2 changes waiting")
        await client.put_bookmark(
            "from-client", {"url": "https://devices.example/from-client", "title": "From the client"}
        )
        await client.flush()

        # The queue survives a reload while offline (the service worker serves the app).
        await a.reload()
        await a.get_by_role("list", name="Bookmarks").wait_for(state="attached")
        await expect_status(a, "1 change waiting")
        await expect(row(a, "devices.example/from-a")).to_have_count(1)

        # Back online: everything is sent, and all three end identical.
        await a.context.set_offline(False)
        await b.context.set_offline(False)
        await expect_status(a, "Synced")
        await expect_status(b, "Synced")
        expected = sorted(
            [
                "Renamed offline on B",
                "From the client",
                "https://devices.example/from-a",
                "https://devices.example/from-b",
            ]
        )

        async def converged() -> bool:
            await client.sync()
            mine = sorted(bm.title or bm.url for bm in await client.list_bookmarks())
            return mine == expected and await titles(a) == expected and await titles(b) == expected

        assert await eventually(converged, timeout=30), (await titles(a), await titles(b))
        assert shared.client_bookmark_id in {bm.client_bookmark_id for bm in await client.list_bookmarks()}
    assert a.errors == [] and b.errors == []


async def test_offline_the_app_opens_from_its_worker_and_searches_locally(new_device: Any) -> None:
    page = await new_device()
    await save_link(page, "https://offline.example/notes")
    # The worker has taken control after the first visit.
    # (Polled from here: the page's policy forbids the eval a string predicate would need.)
    assert await eventually(lambda: page.evaluate("() => navigator.serviceWorker.controller !== null"), timeout=20)
    await page.context.set_offline(True)
    await page.reload()
    await page.get_by_role("list", name="Bookmarks").wait_for(state="attached")
    await expect_status(page, "Offline")
    await expect(row(page, "offline.example/notes")).to_have_count(1)
    await page.get_by_role("searchbox", name="Search").fill("offline")
    await expect(row(page, "offline.example/notes")).to_have_count(1)
    await page.get_by_role("searchbox", name="Search").fill("")
    await row(page, "offline.example/notes").get_by_role("button", name="Details").click()
    await page.get_by_role("region", name="Bookmark details").get_by_role("button", name="Delete").click()
    await expect_status(page, "1 change waiting")
    await page.context.set_offline(False)
    await expect_status(page, "Synced")
    await expect(row(page, "offline.example/notes")).to_have_count(0)


async def test_pairing_brings_a_second_browser_into_the_library(new_device: Any) -> None:
    first = await new_device()
    await save_link(first, "https://pairing.example/kept")
    second = await new_device()
    await add_link(second, "https://pairing.example/local-only")
    code_text = await pair(first, second)
    await expect(row(second, "pairing.example/kept")).to_have_count(1, timeout=20_000)
    await expect(row(second, "pairing.example/local-only")).to_have_count(0)
    # Now they are one library: a change on the second shows on the first.
    await add_link(second, "https://pairing.example/from-second")
    await expect(row(first, "pairing.example/from-second")).to_have_count(1, timeout=20_000)
    # A used code does not work again.
    third = await new_device()
    await third.get_by_role("button", name="Settings").click()
    dialog = third.get_by_role("dialog", name="Settings")
    await dialog.get_by_text("Join with a code").click()
    await dialog.get_by_role("textbox", name="Pairing code").fill(code_text)
    await dialog.get_by_role("button", name="Join library").click()
    await expect(dialog.get_by_role("alert")).to_contain_text("doesn't work")


async def test_sign_out_ends_the_session_on_the_server_and_clears_the_device(
    new_device: Any, http: httpx.AsyncClient
) -> None:
    page = await new_device()
    await save_link(page, "https://signout.example/a")
    refresh_token = await page.evaluate(
        """() => new Promise((resolve) => {
            const open = indexedDB.open("bookmarks");
            open.onsuccess = () => {
                const get = open.result.transaction("meta").objectStore("meta").get("session");
                get.onsuccess = () => resolve(get.result.refreshToken);
            };
        })"""
    )
    await page.get_by_role("button", name="Settings").click()
    await page.get_by_role("dialog", name="Settings").get_by_role("button", name="Sign out").click()
    await expect(page.get_by_role("button", name="Start a new library")).to_be_visible()
    response = await http.post("/v1/auth/refresh", json={"refreshToken": refresh_token})
    assert response.status_code == 401
    stored = await page.evaluate(
        """() => new Promise((resolve) => {
            const open = indexedDB.open("bookmarks");
            open.onsuccess = () => {
                const get = open.result.transaction("bookmarks").objectStore("bookmarks").count();
                get.onsuccess = () => resolve(get.result);
            };
        })"""
    )
    assert stored == 0
    await page.reload()
    await expect(page.get_by_role("button", name="Start a new library")).to_be_visible()


async def test_reloads_in_the_middle_of_token_refreshes_keep_the_session(new_device: Any) -> None:
    page = await new_device()
    assert await eventually(lambda: page.evaluate("() => navigator.serviceWorker.controller !== null"), timeout=20)
    for _ in range(3):
        # A refresh starts and the page goes away at once: the worker finishes it and stores the new
        # pair, so the next page never presents the used token (which would end the whole family).
        await page.evaluate("() => { void window.bookmarksDevice.session.refresh(null); }")
        await page.reload()
        await open_library(page)
    await save_link(page, "https://reload.example/still-signed-in")
    await expect(page.get_by_role("button", name="Start a new library")).to_have_count(0)


async def test_two_tabs_of_one_browser_share_the_library_and_its_queue(new_device: Any) -> None:
    first = await new_device()
    second = await first.context.new_page()
    await open_library(second)
    await first.context.set_offline(True)
    await add_link(first, "https://tabs.example/queued-in-the-first-tab")
    await expect(row(second, "tabs.example/queued")).to_have_count(1)
    await expect_status(second, "1 change waiting")
    await first.context.set_offline(False)
    await expect_status(first, "Synced")
    await expect_status(second, "Synced")
