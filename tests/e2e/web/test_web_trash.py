"""The trash in the web app: deleted bookmarks listed with when they go for good, one restored (back in the
library through sync), one deleted forever, the rest emptied after a confirmation; user text shown as
text; the view is online only; accessibility and a screenshot of it."""

from __future__ import annotations

import re
from typing import Any

from playwright.async_api import expect
from web_support import PHONE, add_link, axe_violations, describe, expect_status, row, screenshot

TRASH_LINE = re.compile(r"^Deleted \d{1,2} [A-Z][a-z]{2}( \d{4})? · gone for good on \d{1,2} [A-Z][a-z]{2}( \d{4})?$")


async def save_titled(page: Any, url: str, title: str) -> None:
    """Adds ``url`` and gives it ``title`` in Details, as a person does."""
    await add_link(page, url)
    await expect(row(page, url.split("/")[2])).not_to_have_count(0)
    await row(page, url.split("/")[2]).first.get_by_role("button", name="Details").click()
    details = page.get_by_role("region", name="Bookmark details")
    await details.get_by_role("textbox", name="Title").fill(title)
    await details.get_by_role("button", name="Close details").click()
    await expect(row(page, title)).to_have_count(1)


async def delete(page: Any, title: str) -> None:
    await row(page, title).get_by_role("button", name="Details").click()
    await page.get_by_role("region", name="Bookmark details").get_by_role("button", name="Delete").click()
    await expect(row(page, title)).to_have_count(0)
    await expect_status(page, "Synced")  # the server has the delete: the bookmark is in its trash


async def toasts_gone(page: Any) -> None:
    """Waits for the notifications to close (an undo toast stays 8 s), so a screenshot shows the view alone."""
    await expect(page.get_by_role("region", name="Notifications").locator(".toast")).to_have_count(0, timeout=15_000)


def trash_items(page: Any) -> Any:
    return page.get_by_role("list", name="Trash").get_by_role("listitem")


async def test_trash_restore_delete_forever_and_empty(new_device: Any) -> None:
    page = await new_device()
    alerts: list[str] = []
    page.on("dialog", lambda dialog: (alerts.append(dialog.message), dialog.dismiss()))
    nav = page.get_by_role("navigation", name="Library")
    for n, title in enumerate(("Sourdough starter notes", "Packing list for Lisbon", "Old conference schedule")):
        await save_titled(page, f"https://trash{n}.example/page", title)
    await expect_status(page, "Synced")

    await delete(page, "Sourdough starter notes")
    await delete(page, "Packing list for Lisbon")
    await nav.get_by_role("link", name="Trash").click()
    await expect(page.get_by_role("heading", name="Trash")).to_be_visible()
    items = trash_items(page)
    await expect(items).to_have_count(2)
    # Most recently deleted first, each with when it goes for good.
    await expect(items.nth(0)).to_contain_text("Packing list for Lisbon")
    await expect(items.nth(1)).to_contain_text("Sourdough starter notes")
    for n in range(2):
        await expect(items.nth(n).get_by_text("gone for good on")).to_have_text(TRASH_LINE)
    assert await axe_violations(page) == [], describe(await axe_violations(page))
    await toasts_gone(page)
    await screenshot(page, "trash-light-desktop")

    # Restore: gone from the trash, back in the library (through sync, at once).
    await items.filter(has_text="Sourdough starter notes").get_by_role("button", name="Restore").press("Enter")
    await expect(items.filter(has_text="Sourdough starter notes")).to_have_count(0)
    await expect(items).to_have_count(1)
    # The focus moves to the item now in its place, so a keyboard user carries on from there.
    await expect(items.first.get_by_role("button", name="Restore")).to_be_focused()
    await expect(page.get_by_role("region", name="Notifications")).to_contain_text(
        "Restored “Sourdough starter notes”."
    )
    await nav.get_by_role("link", name="All").click()
    await expect(row(page, "Sourdough starter notes")).to_have_count(1)

    # Delete forever: gone from the trash, and not in the library either.
    await nav.get_by_role("link", name="Trash").click()
    await expect(items).to_have_count(1)
    await items.filter(has_text="Packing list for Lisbon").get_by_role("button", name="Delete forever").click()
    await expect(items).to_have_count(0)
    await expect(page.get_by_text("Nothing in the trash.")).to_be_visible()
    await expect(page.get_by_role("heading", name="Trash")).to_be_focused()  # the last item gone: the heading
    await page.reload()
    await expect(page.get_by_text("Nothing in the trash.")).to_be_visible()  # the server forgot it too
    await expect(items).to_have_count(0)

    # Empty trash asks first; Cancel keeps everything, confirming empties it.
    await nav.get_by_role("link", name="All").click()
    await delete(page, "Old conference schedule")
    await nav.get_by_role("link", name="Trash").click()
    await expect(items).to_have_count(1)
    await page.get_by_role("button", name="Empty trash").click()
    dialog = page.get_by_role("dialog", name="Empty the trash?")
    await expect(dialog).to_be_visible()
    await expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
    assert await axe_violations(page) == [], describe(await axe_violations(page))
    await screenshot(page, "trash-empty-light-desktop")
    await dialog.get_by_role("button", name="Cancel").click()
    await expect(dialog).to_have_count(0)
    await expect(items).to_have_count(1)
    await page.get_by_role("button", name="Empty trash").click()
    await dialog.get_by_role("button", name="Empty trash").click()
    await expect(dialog).to_have_count(0)
    await expect(items).to_have_count(0)
    await expect(page.get_by_text("Nothing in the trash.")).to_be_visible()
    await expect(page.get_by_role("button", name="Empty trash")).to_be_disabled()
    await nav.get_by_role("link", name="All").click()
    await expect(row(page, "Sourdough starter notes")).to_have_count(1)
    await expect(row(page, "Old conference schedule")).to_have_count(0)
    assert alerts == []
    assert page.errors == []


async def test_trash_shows_titles_as_text_and_needs_a_connection(new_device: Any) -> None:
    page = await new_device(viewport=PHONE, color_scheme="dark")
    alerts: list[str] = []
    page.on("dialog", lambda dialog: (alerts.append(dialog.message), dialog.dismiss()))
    hostile = "<img src=x onerror=alert(1)>"
    await save_titled(page, "https://hostile.example/x", hostile)
    await add_link(page, "https://untitled-trash.example/only-a-url")
    await expect(row(page, "untitled-trash.example")).to_have_count(1)
    await expect_status(page, "Synced")
    await delete(page, hostile)
    await delete(page, "untitled-trash.example")

    await page.get_by_role("button", name="Menu").click()
    await page.get_by_role("navigation", name="Library").get_by_role("link", name="Trash").click()
    items = trash_items(page)
    await expect(items).to_have_count(2)
    await expect(items.filter(has_text=hostile)).to_have_count(1)  # the markup, as text
    assert await page.get_by_role("list", name="Trash").locator("img[src='x']").count() == 0
    # An untitled bookmark is called by its URL.
    await expect(items.nth(0)).to_contain_text("https://untitled-trash.example/only-a-url")
    assert await axe_violations(page) == [], describe(await axe_violations(page))
    await toasts_gone(page)
    await screenshot(page, "trash-dark-phone")

    # Offline: the trash says it needs a connection; back online it shows again.
    await page.context.set_offline(True)
    await expect(page.get_by_text("The trash needs a connection.")).to_be_visible()
    await expect(items).to_have_count(0)
    await page.context.set_offline(False)
    await expect(items).to_have_count(2)
    assert alerts == []
    assert page.errors == []
