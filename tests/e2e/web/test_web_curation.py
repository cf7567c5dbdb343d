"""Curation in the web app: duplicates (the same link saved under two spellings) found, merged into the
chosen copy and the merge undone from the toast; a search's every match archived by one bulk call and
the bulk undone; the views' offline states, accessibility and a screenshot of the Duplicates view."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import httpx
from playwright.async_api import expect
from web_support import PHONE, axe_violations, describe, expect_status, open_library, row, screenshot


async def open_with_token(new_device: Any, **options: Any) -> tuple[Any, str]:
    """A device of the app and the access token its session uses (read off its own requests), so the
    test can write through the API as that library without rotating the page's refresh token."""
    page = await new_device(open_app=False, **options)
    seen: list[Any] = []
    page.on("request", lambda request: seen.append(request) if "/v1/" in request.url else None)
    await open_library(page)
    for request in seen:
        value = await request.header_value("authorization")
        if value and value.startswith("Bearer "):
            return page, value
    raise AssertionError("the app sent no authorized request")


async def put(http: httpx.AsyncClient, token: str, url: str, title: str, saved_at: str) -> str:
    bookmark_id = str(uuid.uuid4())
    body = {"url": url, "title": title, "clientSavedAt": saved_at}
    response = await http.put(f"/v1/bookmarks/{bookmark_id}", json=body, headers={"Authorization": token})
    assert response.status_code == 200, response.text
    return bookmark_id


def notifications(page: Any) -> Any:
    return page.get_by_role("region", name="Notifications")


async def toasts_gone(page: Any) -> None:
    await expect(notifications(page).locator(".toast")).to_have_count(0, timeout=15_000)


async def test_duplicates_merge_and_undo(new_device: Any, http: httpx.AsyncClient) -> None:
    page, token = await open_with_token(new_device)
    alerts: list[str] = []
    page.on("dialog", lambda dialog: (alerts.append(dialog.message), dialog.dismiss()))
    nav = page.get_by_role("navigation", name="Library")
    await put(
        http, token, "https://www.ferns.example/guide?utm_source=x", "Field guide to ferns", "2026-11-02T09:00:00Z"
    )
    await put(http, token, "https://ferns.example/guide", "Ferns, saved again", "2026-11-20T09:00:00Z")
    await put(http, token, "https://untitled-dup.example/page", "", "2026-11-03T09:00:00Z")
    await put(http, token, "https://UNTITLED-dup.example/page#top", "", "2026-11-04T09:00:00Z")
    await put(http, token, "https://single.example/", "Only once", "2026-11-05T09:00:00Z")
    await expect(row(page, "ferns")).to_have_count(2)  # through the realtime nudge and delta

    # The navigation counts the groups; the view lists them, each member with its domain and save date.
    link = nav.get_by_role("link", name="Duplicates")
    await expect(link).to_have_accessible_name("Duplicates 2")
    await link.click()
    view = page.get_by_role("region", name="Duplicates")
    groups = view.get_by_role("list", name="Duplicate groups").locator(":scope > li")
    await expect(groups).to_have_count(2)
    ferns = groups.filter(has_text="Field guide to ferns")
    await expect(ferns).to_contain_text("Ferns, saved again")
    await expect(ferns.get_by_text("ferns.example", exact=True)).to_have_count(2)  # the normalized domain
    await expect(ferns).to_contain_text("https://www.ferns.example/guide?utm_source=x")  # and the URL as saved
    await expect(ferns).to_contain_text("Saved 2 Nov")
    await expect(ferns).to_contain_text("Saved 20 Nov")
    # An untitled member is called by its URL.
    await expect(groups.filter(has_text="https://untitled-dup.example/page")).to_have_count(1)
    await expect(view).not_to_contain_text("Only once")
    # Each group has its own radios, the oldest save chosen at first.
    keep = ferns.get_by_role("radio", name="Keep")
    await expect(keep).to_have_count(2)
    await expect(keep.nth(0)).to_be_checked()
    await expect(groups.nth(0).get_by_role("radio", name="Keep").first).to_be_checked()
    await expect(groups.nth(1).get_by_role("radio", name="Keep").first).to_be_checked()
    assert await axe_violations(page) == [], describe(await axe_violations(page))
    await toasts_gone(page)
    await screenshot(page, "duplicates-light-desktop")

    # Keep the newer copy: the older goes to the trash, the group leaves the view.
    await keep.nth(1).check()
    await expect(keep.nth(0)).not_to_be_checked()
    await expect(groups.nth(1).get_by_role("radio", name="Keep").first).to_be_checked()  # the other group untouched
    await ferns.get_by_role("button", name="Merge").click()
    await expect(groups).to_have_count(1)
    toast = notifications(page).locator(".toast").filter(has_text="Merged 1 copy into “Ferns, saved again”.")
    await expect(toast).to_have_count(1)
    await expect(link).to_have_accessible_name("Duplicates 1")
    await nav.get_by_role("link", name="All").click()
    await expect(row(page, "Ferns, saved again")).to_have_count(1)
    await expect(row(page, "Field guide to ferns")).to_have_count(0)

    # Undo: the merged copy is restored from the trash, and the group is back.
    await toast.get_by_role("button", name="Undo").click()
    await expect(row(page, "Field guide to ferns")).to_have_count(1)
    await expect(notifications(page)).to_contain_text("Restored 1 bookmark from the merge.")
    await link.click()
    await expect(groups).to_have_count(2)
    await expect(link).to_have_accessible_name("Duplicates 2")

    # Merging everything leaves a tidy library.
    for _ in range(2):
        await groups.first.get_by_role("button", name="Merge").click()
    await expect(groups).to_have_count(0)
    await expect(view.get_by_text("No duplicates. Your library is tidy.")).to_be_visible()
    await expect(link).to_have_accessible_name("Duplicates 0")
    assert alerts == []
    assert page.errors == []


async def test_duplicates_need_a_connection(new_device: Any, http: httpx.AsyncClient) -> None:
    page, token = await open_with_token(new_device, viewport=PHONE, color_scheme="dark")
    await put(http, token, "https://www.phone-dup.example/a?utm_campaign=z", "Trail map", "2026-11-02T09:00:00Z")
    await put(http, token, "https://phone-dup.example/a", "Trail map again", "2026-11-03T09:00:00Z")
    await expect(row(page, "Trail map")).to_have_count(2)
    await page.get_by_role("button", name="Menu").click()
    link = page.get_by_role("navigation", name="Library").get_by_role("link", name="Duplicates")
    await expect(link).to_have_accessible_name("Duplicates 1")
    await link.click()
    view = page.get_by_role("region", name="Duplicates")
    await expect(view.get_by_role("radio", name="Keep")).to_have_count(2)
    assert await axe_violations(page) == [], describe(await axe_violations(page))
    await toasts_gone(page)
    await screenshot(page, "duplicates-dark-phone")

    await page.context.set_offline(True)
    await expect(view.get_by_text("Duplicates need a connection.")).to_be_visible()
    await expect(view.get_by_role("radio", name="Keep")).to_have_count(0)
    await page.get_by_role("button", name="Menu").click()
    await expect(link).to_have_accessible_name("Duplicates")  # no count offline
    await page.context.set_offline(False)
    await expect(view.get_by_role("radio", name="Keep")).to_have_count(2)
    assert page.errors == []


async def test_archive_every_match_of_a_search_in_one_call_and_undo(new_device: Any, http: httpx.AsyncClient) -> None:
    page, token = await open_with_token(new_device)
    for n, title in enumerate(("Sourdough fermentation", "Kimchi fermentation basics", "Fermentation crocks")):
        await put(http, token, f"https://ferment{n}.example/", title, f"2026-11-0{n + 1}T09:00:00Z")
    await put(http, token, "https://bread.example/", "Baking bread at home", "2026-11-04T09:00:00Z")
    await expect(row(page, "ermentation")).to_have_count(3)
    await expect_status(page, "Synced")
    bulk_posts: list[Any] = []
    page.on(
        "request",
        lambda r: bulk_posts.append(r) if r.method == "POST" and r.url.endswith("/v1/bookmarks/bulk") else None,
    )

    await page.get_by_role("searchbox", name="Search").fill("fermentation")
    await expect(row(page, "ermentation")).to_have_count(3)
    await expect(row(page, "Baking bread")).to_have_count(0)
    await page.get_by_role("button", name="Select all matching the search").click()
    bar = page.get_by_role("toolbar", name="Selection")
    await expect(bar).to_contain_text("Everything matching “fermentation”")
    await expect(bar.get_by_role("button", name="Select all matching the search")).to_have_count(0)
    await bar.get_by_role("button", name="Archive").click()
    toast = notifications(page).locator(".toast").filter(has_text="Archived 3 bookmarks.")
    await expect(toast).to_have_count(1)

    await page.get_by_role("searchbox", name="Search").fill("")
    await expect(page.get_by_role("heading", name="All bookmarks")).to_be_visible()
    await expect(row(page, "ermentation")).to_have_count(0)
    await expect(row(page, "Baking bread")).to_have_count(1)
    await toast.get_by_role("button", name="Undo").click()
    await expect(row(page, "ermentation")).to_have_count(3)
    await expect(notifications(page)).to_contain_text("Put back 3 bookmarks.")

    # One call, naming the search rather than the ids.
    assert len(bulk_posts) == 1
    assert json.loads(bulk_posts[0].post_data) == {"action": "archive", "query": "fermentation"}
    archived = page.get_by_role("navigation", name="Library").get_by_role("link", name=re.compile("^Archived"))
    await expect(archived).to_have_accessible_name("Archived 0")
    assert page.errors == []


async def test_a_hand_made_selection_goes_by_ids_online_and_through_the_queue_offline(
    new_device: Any, http: httpx.AsyncClient
) -> None:
    page, token = await open_with_token(new_device)
    ids = [
        await put(http, token, f"https://pick{n}.example/", f"Pick {n}", f"2026-11-0{n + 1}T09:00:00Z")
        for n in range(3)
    ]
    await expect(row(page, "Pick ")).to_have_count(3)
    await expect_status(page, "Synced")
    bulk_posts: list[Any] = []
    page.on(
        "request",
        lambda r: bulk_posts.append(r) if r.method == "POST" and r.url.endswith("/v1/bookmarks/bulk") else None,
    )
    for title in ("Pick 0", "Pick 2"):
        await row(page, title).get_by_role("checkbox").check()
    bar = page.get_by_role("toolbar", name="Selection")
    await bar.get_by_role("button", name="Favorite").click()
    await expect(notifications(page)).to_contain_text("Favorited 2 bookmarks.")
    assert len(bulk_posts) == 1
    sent = json.loads(bulk_posts[0].post_data)
    assert sent["action"] == "favorite" and sorted(sent["ids"]) == sorted([ids[0], ids[2]])
    favorites = page.get_by_role("navigation", name="Library").get_by_role("link", name=re.compile("^Favorites"))
    await expect(favorites).to_have_accessible_name("Favorites 2")

    # Offline the same toolbar writes through the local queue, sent once back online.
    await page.context.set_offline(True)
    await expect_status(page, "Offline")
    await bar.get_by_role("button", name="Archive").click()
    await expect(row(page, "Pick 0")).to_have_count(0)
    await expect_status(page, "2 changes waiting")
    await page.context.set_offline(False)
    await expect_status(page, "Synced")
    assert len(bulk_posts) == 1
    assert page.errors == []
