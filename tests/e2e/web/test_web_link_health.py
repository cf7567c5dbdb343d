"""Link health in the web app (docs/api-guide.md, section 15): bookmarks of pages that work, moved, went
missing, fail or refuse robots are checked by the platform's own checker ("Check now"; a failure is
confirmed by the retry LINK_CHECK_RETRY_HOURS later, seconds in this stack), and the results reach the
browser through delta: the rows' badges, Details' wording and actions, "Use new address", the Wayback
Machine link, the view "Broken links", the saved copy; accessibility and screenshots."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from playwright.async_api import expect
from web_support import axe_violations, describe, expect_status, row, screenshot

CHECK_TIMEOUT_MS = 90_000  # a check, its confirmation 3.6 s later, the worker's poll and the delta
ACCEPTED = "Checking the link. The result shows here in a moment."
NOT_YET = "This link can't be checked yet. Try again in a moment."
TOO_MANY = re.compile(r"^That's a lot of checks in a minute\. Try again in (\d+ seconds|a moment)\.$")


async def add_titled(page: Any, url: str, title: str) -> None:
    """Saves ``url`` with ``title`` through the quick add's "More" fields, as a person does."""
    form = page.get_by_role("form", name="Add a link")
    if await form.get_by_role("textbox", name="Title").count() == 0:
        await form.get_by_role("button", name="More").click()
    await form.get_by_role("textbox", name="Title").fill(title)
    await form.get_by_role("textbox", name="URL").fill(url)
    await form.get_by_role("button", name="Save").click()
    await expect(row(page, title)).to_have_count(1)


def details(page: Any) -> Any:
    return page.get_by_role("region", name="Bookmark details")


async def open_details(page: Any, title: str) -> Any:
    await row(page, title).get_by_role("button", name="Details").click()
    panel = details(page)
    await expect(panel.get_by_role("textbox", name="Title")).to_have_value(title)
    return panel


async def check_now(page: Any, title: str) -> None:
    """ "Check now" in the bookmark's Details; a bookmark saved a moment ago may be unknown to the checker
    for a moment (the answer says so), then it is asked again."""
    panel = await open_details(page, title)
    status = panel.get_by_role("group", name="Link", exact=True).get_by_role("status")
    for _ in range(10):
        await panel.get_by_role("button", name="Check now").click()
        await expect(status).not_to_have_text("")
        await expect(panel.get_by_role("button", name="Check now")).to_be_enabled()
        text = await status.inner_text()
        if text == ACCEPTED:
            return
        assert text == NOT_YET, text
        await page.wait_for_timeout(1000)
    raise AssertionError(f"the checker never knew {title!r}")


async def test_link_health_badges_details_broken_links_and_a_move(new_device: Any, site: Any) -> None:
    page = await new_device()
    nav = page.get_by_role("navigation", name="Library")
    works = site.add_article("Bread that keeps")
    moved_to = site.add_article("Pizza dough, new home")
    old = "/recipes/pizza-dough"
    site.redirects[old] = (301, moved_to)
    moved = site.url(old)
    gone = site.url("/recipes/vanished-focaccia")  # no such page: 404
    site.statuses["/recipes/broken-bagels"] = 503
    unreachable = site.url("/recipes/broken-bagels")
    site.statuses["/recipes/members-only"] = 403
    blocked = site.url("/recipes/members-only")
    never = site.url("/recipes/never-checked")
    saved = {
        "Bread that keeps": works,
        "Pizza dough": moved,
        "Focaccia": gone,
        "Bagels": unreachable,
        "Members' pie": blocked,
        "Unchecked crumble": never,
    }
    for title, url in saved.items():
        await add_titled(page, url, title)
    await page.get_by_role("form", name="Add a link").get_by_role("button", name="More").click()  # folded again
    await expect_status(page, "Synced")

    # Nothing is broken yet: the view says so in a sentence.
    await nav.get_by_role("link", name="Broken links").click()
    await expect(page.get_by_role("heading", name="Broken links")).to_be_visible()
    await expect(page.get_by_text("No broken links.")).to_be_visible()
    await nav.get_by_role("link", name="All").click()

    # Never checked: Details says so, with every action but the move.
    panel = await open_details(page, "Unchecked crumble")
    await expect(panel.get_by_text("Link not checked yet.")).to_be_visible()
    await expect(panel.get_by_role("button", name="Check now")).to_be_enabled()
    await expect(panel.get_by_role("button", name="Use new address")).to_have_count(0)
    await expect(panel.get_by_role("button", name="Open saved copy")).to_be_visible()

    for title in ("Bread that keeps", "Pizza dough", "Focaccia", "Bagels", "Members' pie"):
        await check_now(page, title)

    # The results arrive through delta: badges on the broken and moved rows only.
    await expect(row(page, "Focaccia")).to_contain_text("Link broken", timeout=CHECK_TIMEOUT_MS)
    await expect(row(page, "Bagels")).to_contain_text("Link broken", timeout=CHECK_TIMEOUT_MS)
    await expect(row(page, "Pizza dough")).to_contain_text("Moved", timeout=CHECK_TIMEOUT_MS)
    for title in ("Bread that keeps", "Members' pie", "Unchecked crumble"):
        await expect(row(page, title).locator(".link-badge")).to_have_count(0)

    wording = {
        "Bread that keeps": "Link checked just now: works",
        "Pizza dough": "Link checked just now: moved",
        "Focaccia": "Link checked just now: not found",
        "Bagels": "Link checked just now: not reachable",
        "Members' pie": "Link checked just now: blocked for robots — may work in a browser",
        "Unchecked crumble": "Link not checked yet.",
    }
    today = datetime.now(UTC).strftime("%Y%m%d")
    for title, line in wording.items():
        panel = await open_details(page, title)
        await expect(panel.locator(".link-line")).to_have_text(line, timeout=CHECK_TIMEOUT_MS)
        await expect(panel.get_by_role("button", name="Use new address")).to_have_count(
            1 if title == "Pizza dough" else 0
        )
        wayback = panel.get_by_role("link", name="Wayback Machine")
        await expect(wayback).to_have_attribute("href", f"https://web.archive.org/web/{today}/{saved[title]}")
        await expect(wayback).to_have_attribute("target", "_blank")
        await expect(wayback).to_have_attribute("rel", "noopener noreferrer")

    # The move in Details: the new address shown, accessible, pictured.
    panel = await open_details(page, "Pizza dough")
    await expect(panel).to_contain_text(f"New address: {moved_to}")
    assert await axe_violations(page) == [], describe(await axe_violations(page))
    await panel.locator(".link-health").scroll_into_view_if_needed()
    await screenshot(page, "link-health-details-light-desktop")

    # Broken links: the gone and the unreachable one, nothing else; accessible, pictured.
    await panel.get_by_role("button", name="Close details").click()
    await nav.get_by_role("link", name="Broken links").click()
    await expect(page.get_by_role("heading", name="Broken links")).to_be_visible()
    items = page.get_by_role("list", name="Bookmarks").get_by_role("listitem")
    await expect(items).to_have_count(2)
    assert sorted(await items.locator("a.title").all_inner_texts()) == ["Bagels", "Focaccia"]
    await expect(nav.get_by_role("link", name="Broken links")).to_contain_text("2")
    assert await axe_violations(page) == [], describe(await axe_violations(page))
    await expect(page.get_by_role("region", name="Notifications").locator(".toast")).to_have_count(0, timeout=15_000)
    await screenshot(page, "broken-links-light-desktop")

    # The search language finds them too (locally at once, then the server's answer).
    await page.get_by_role("searchbox", name="Search").fill("is:broken")
    await expect(page.get_by_role("heading", name="Results for “is:broken”")).to_be_visible()
    await expect(items).to_have_count(2)
    assert sorted(await items.locator("a.title").all_inner_texts()) == ["Bagels", "Focaccia"]
    await page.get_by_role("searchbox", name="Search").fill("link:moved")
    await expect(items).to_have_count(1)
    await expect(items.first).to_contain_text("Pizza dough")
    await page.get_by_role("searchbox", name="Search").fill("")

    # "Open saved copy" opens the Reader over the stored copy (none was taken of this page: it says so).
    panel = await open_details(page, "Focaccia")
    await panel.get_by_role("button", name="Open saved copy").click()
    reader = page.get_by_role("region", name="Reader")
    await expect(reader).to_be_visible()
    await expect(reader).to_contain_text("There's no saved copy of this page yet.")
    await reader.get_by_role("button", name="Close reader").click()
    await expect(reader).to_have_count(0)

    # "Use new address": the bookmark takes the address the link moved to, through the ordinary write;
    # the server clears the old address's health, and a reload (the server's copy) keeps it.
    await nav.get_by_role("link", name="All").click()
    panel = await open_details(page, "Pizza dough")
    await panel.get_by_role("button", name="Use new address").click()
    await expect(panel.get_by_role("link", name=moved_to, exact=True)).to_be_visible()
    await expect(panel.get_by_role("button", name="Use new address")).to_have_count(0)
    await expect_status(page, "Synced")
    await expect(row(page, "Pizza dough").locator("a.title")).to_have_attribute("href", moved_to)
    await expect(row(page, "Pizza dough").locator(".link-badge")).to_have_count(0)
    await page.reload()
    await expect_status(page, "Synced")
    await expect(row(page, "Pizza dough").locator("a.title")).to_have_attribute("href", moved_to)
    panel = await open_details(page, "Pizza dough")
    await expect(panel.locator(".link-line")).to_have_text("Link not checked yet.")

    # Offline, "Check now" waits for a connection.
    await page.context.set_offline(True)
    await expect(panel.get_by_role("button", name="Check now")).to_be_disabled()
    await expect(panel.get_by_text("Checking a link needs a connection.")).to_be_visible()
    await page.context.set_offline(False)
    await expect(panel.get_by_role("button", name="Check now")).to_be_enabled()

    # More than 10 checks in a minute: a sentence, not an error code.
    status = panel.get_by_role("group", name="Link", exact=True).get_by_role("status")
    for _ in range(25):  # the count is per calendar minute: enough clicks for one minute to see 11
        await panel.get_by_role("button", name="Check now").click()
        await expect(panel.get_by_role("button", name="Check now")).to_be_enabled()
        await expect(status).not_to_have_text("")
        if TOO_MANY.match(await status.inner_text()):
            break
    await expect(status).to_have_text(TOO_MANY)
    assert page.errors == []
