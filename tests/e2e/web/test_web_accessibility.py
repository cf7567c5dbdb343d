"""Accessibility the axe check alone does not prove: the virtual list tells its whole size and each row's
place (aria-setsize, aria-posinset) wherever it is scrolled and however it is filtered; the single-key
shortcuts can be turned off in Settings (WCAG 2.1.4), per device and across a reload; every status
region says the text it shows: the sync state is named "Sync" and described by its text, the others have
no label over their text."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from e2e_support import anonymous
from playwright.async_api import expect
from web_support import (
    add_link,
    axe_violations,
    describe,
    expect_status,
    open_library,
    row,
    screenshot,
    seed_session,
    sync_status,
)

COUNT = 150
FAVORITE_EVERY = 10
ROW_HEIGHT = 84  # web/src/ui/List.tsx


def title_of(n: int) -> str:
    return f"Entry {n:03d}"


async def long_library(new_device: Any, http: httpx.AsyncClient) -> Any:
    """A page of a library of ``COUNT`` bookmarks, "Entry 000" the oldest; every tenth a favorite."""
    device = await anonymous(http)
    start = datetime(2026, 1, 1, tzinfo=UTC)

    async def put(n: int) -> None:
        body = {
            "url": f"https://long-list.example/{n}",
            "title": title_of(n),
            "clientSavedAt": (start + timedelta(minutes=n)).isoformat().replace("+00:00", "Z"),
            "isFavorite": n % FAVORITE_EVERY == 0,
        }
        await device.put(f"long-{n:03d}", body)

    for chunk in range(0, COUNT, 10):
        await asyncio.gather(*(put(n) for n in range(chunk, min(COUNT, chunk + 10))))
    page = await new_device(open_app=False)
    await seed_session(page, device.session)
    await open_library(page)
    await expect(page.locator(".list-count")).to_have_text(f"{COUNT} bookmarks", timeout=30_000)
    return page


async def rendered(page: Any) -> list[dict[str, Any]]:
    """The rows in the DOM now: their place (data-index), aria-setsize, aria-posinset and title."""
    items = page.get_by_role("list", name="Bookmarks").get_by_role("listitem")
    return await items.evaluate_all(
        """(rows) => rows.map((li) => ({
            index: Number(li.dataset.index),
            setsize: li.getAttribute("aria-setsize"),
            posinset: li.getAttribute("aria-posinset"),
            title: li.querySelector("a.title").textContent,
        }))"""
    )


def check_rows(rows: list[dict[str, Any]], size: int, title_at: Any) -> None:
    assert rows, "no row rendered"
    for r in rows:
        assert r["setsize"] == str(size), r
        assert r["posinset"] == str(r["index"] + 1), r
        assert r["title"] == title_at(r["index"] + 1), r


async def scroll_to(page: Any, position: int) -> None:
    """Scrolls the list so the row at 1-based ``position`` is at the top, and waits for it to render."""
    await page.locator(".list-scroll").evaluate("(el, top) => { el.scrollTop = top; }", (position - 1) * ROW_HEIGHT)
    await expect(page.locator(f'li[aria-posinset="{position}"]')).to_have_count(1)


async def test_the_virtual_list_tells_its_size_and_each_rows_place(new_device: Any, http: httpx.AsyncClient) -> None:
    page = await long_library(new_device, http)

    def newest_first(position: int) -> str:
        return title_of(COUNT - position)

    first = await rendered(page)
    assert len(first) < COUNT / 2, f"{len(first)} rows rendered: the list is not virtual any more"
    check_rows(first, COUNT, newest_first)
    assert min(r["index"] for r in first) == 0

    # Scrolled to the middle and to the end: the rows there still know the whole and their place.
    await scroll_to(page, 81)
    middle = await rendered(page)
    assert min(r["index"] for r in middle) > 0
    check_rows(middle, COUNT, newest_first)
    await screenshot(page, "list-scrolled-light-desktop")
    await scroll_to(page, COUNT - 5)
    end = await rendered(page)
    check_rows(end, COUNT, newest_first)
    assert str(COUNT) in {r["posinset"] for r in end}
    assert await axe_violations(page) == [], describe(await axe_violations(page))

    # Filtered (Favorites: every tenth), the size is the filtered list's and the places are in it.
    await scroll_to(page, 1)
    favorites = COUNT // FAVORITE_EVERY
    await page.get_by_role("navigation", name="Library").get_by_role("link", name="Favorites").click()
    await expect(page.locator(".list-count")).to_have_text(f"{favorites} bookmarks")
    check_rows(await rendered(page), favorites, lambda position: title_of((favorites - position) * FAVORITE_EVERY))

    # A search's results are a list of their own size.
    await page.get_by_role("navigation", name="Library").get_by_role("link", name="All").click()
    await page.get_by_role("searchbox", name="Search").fill("Entry 007")
    await expect(page.get_by_role("list", name="Bookmarks").get_by_role("listitem")).to_have_count(1)
    check_rows(await rendered(page), 1, lambda position: title_of(7))
    assert page.errors == []


async def press_and_settle(page: Any, key: str) -> None:
    """A key pressed with nothing focused, then a moment for anything it starts to show."""
    await page.evaluate("document.activeElement && document.activeElement.blur()")
    await page.keyboard.press(key)
    await page.wait_for_timeout(400)


async def shortcuts_do_nothing(page: Any) -> None:
    help_dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    await press_and_settle(page, "?")
    await expect(help_dialog).to_have_count(0)
    await press_and_settle(page, "/")
    await expect(page.get_by_role("searchbox", name="Search")).not_to_be_focused()
    await press_and_settle(page, "n")
    await expect(page.get_by_role("textbox", name="URL")).not_to_be_focused()
    await press_and_settle(page, "j")
    await expect(page.locator("li.row.active")).to_have_count(0)
    # On a focused row (the second), "k", "f" and "e" would move up, favorite and archive.
    item = row(page, "keys.example/one")
    await item.focus()
    await expect(page.locator("li.row.active")).to_have_attribute("data-index", "1")
    for key in ("k", "f", "e"):
        await page.keyboard.press(key)
    await page.wait_for_timeout(400)
    await expect(page.locator("li.row.active")).to_have_attribute("data-index", "1")
    await expect(item.locator(".fav")).to_have_count(0)
    await expect(item).to_have_count(1)
    # Enter, a standard key, still opens the focused row's details; Escape closes them.
    await page.keyboard.press("Enter")
    details = page.get_by_role("region", name="Bookmark details")
    await expect(details).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(details).to_have_count(0)


async def settings_switch(page: Any) -> Any:
    await page.get_by_role("button", name="Settings").click()
    settings = page.get_by_role("dialog", name="Settings")
    await expect(settings).to_be_visible()
    return settings.get_by_role("checkbox", name="Keyboard shortcuts")


async def close_settings(page: Any) -> None:
    await page.get_by_role("dialog", name="Settings").get_by_role("button", name="Close").click()
    await expect(page.get_by_role("dialog", name="Settings")).to_have_count(0)


async def test_single_key_shortcuts_can_be_turned_off_on_this_device(new_device: Any) -> None:
    page = await new_device()
    for n, path in enumerate(("one", "two")):
        await add_link(page, f"https://keys.example/{path}")
        await expect(row(page, "keys.example")).to_have_count(n + 1)
    await expect_status(page, "Synced")

    # On by default: "?" opens the help, which says where to turn them off.
    await press_and_settle(page, "?")
    help_dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    await expect(help_dialog).to_be_visible()
    await expect(help_dialog).to_contain_text("turn the single-key shortcuts off in Settings")
    await page.keyboard.press("Escape")
    await expect(help_dialog).to_have_count(0)
    switch = await settings_switch(page)
    await expect(switch).to_be_checked()
    assert await axe_violations(page) == [], describe(await axe_violations(page))
    await switch.scroll_into_view_if_needed()
    await screenshot(page, "settings-keyboard-light-desktop")
    await switch.uncheck()
    await close_settings(page)

    # Off: no single character does anything; the help still opens from its button.
    await shortcuts_do_nothing(page)
    await page.get_by_role("button", name="Keyboard shortcuts help").click()
    await expect(help_dialog).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(help_dialog).to_have_count(0)

    # The choice is this device's and outlasts a reload.
    await page.reload()
    await open_library(page)
    await shortcuts_do_nothing(page)
    switch = await settings_switch(page)
    await expect(switch).not_to_be_checked()
    await switch.check()
    await close_settings(page)

    # On again: the keys work at once ("k" from the second row to the first).
    await expect(page.locator("li.row.active")).to_have_attribute("data-index", "1")
    await press_and_settle(page, "k")
    await expect(page.locator("li.row.active")).to_have_attribute("data-index", "0")
    await press_and_settle(page, "/")
    await expect(page.get_by_role("searchbox", name="Search")).to_be_focused()
    await page.keyboard.press("Escape")
    await press_and_settle(page, "?")
    await expect(help_dialog).to_be_visible()
    assert page.errors == []


async def expect_sync_state(page: Any, state: str) -> None:
    """The sync state shows ``state``, and what assistive technology gets is its name "Sync" with that text
    as its description and content, not a label in place of it."""
    await expect_status(page, state)
    status = sync_status(page)
    seen: tuple[str, str, str] = ("", "", "")
    for _ in range(50):  # read all at one moment: a sync can start between two reads
        seen = (
            (await status.inner_text()).strip(),
            await status.aria_snapshot(),
            await status.evaluate("e => document.getElementById(e.getAttribute('aria-describedby')).textContent"),
        )
        if seen == (state, f'- status "Sync": {state}', state):
            return
        await page.wait_for_timeout(200)
    raise AssertionError(f"shown, announced and described differ from {state!r}: {seen}")


async def test_status_regions_say_the_text_they_show(new_device: Any) -> None:
    page = await new_device()
    await expect_sync_state(page, "Synced")
    await page.context.set_offline(True)
    await expect_sync_state(page, "Offline")
    await add_link(page, "https://status.example/a")
    await expect_sync_state(page, "Offline · 1 change waiting")
    await page.context.set_offline(False)
    await expect_sync_state(page, "Synced")
    # No other status of the views (the enrichment notice, Details' link check) has a label of its own.
    await row(page, "status.example").get_by_role("button", name="Details").click()
    await expect(page.get_by_role("region", name="Bookmark details")).to_be_visible()
    assert await page.locator('[role="status"]').count() >= 3
    assert await page.locator('[role="status"][aria-label]').count() == 1  # the sync state's "Sync"
    assert page.errors == []
