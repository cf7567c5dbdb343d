"""Enrich from the details panel, then read the saved copy: the page's text shows, nothing of the page
runs (its scripts and handlers are gone and the frame has no scripts), typography settings apply;
a shared link (Web Share Target) is saved."""

from __future__ import annotations

from typing import Any

from playwright.async_api import expect
from web_support import add_link, axe_violations, describe, expect_status, row, screenshot

HOSTILE_BODY = (
    "<script>parent.document.title = 'pwned'</script>"
    "<img src=x onerror=\"parent.document.title = 'pwned'\">"
    "<p>Knead the dough gently, then let it rest overnight.</p>"
    "<a href=\"javascript:parent.document.title='pwned'\">a trap</a>"
    '<form action="https://evil.example/"><input name=q></form>'
)
HOSTILE_PAGE = (
    "<!doctype html><html lang=en><head><title>Sourdough at home</title>"
    "<meta name=description content='How to bake sourdough bread at home.'></head><body>"
    f"<nav>Menu</nav><article><h1>Sourdough at home</h1>{HOSTILE_BODY}"
    "<p>Sourdough bread is leavened by a culture of wild yeast and lactic acid bacteria.</p></article>"
    "</body></html>"
)


async def test_enrich_then_read_the_saved_copy_safely(new_device: Any, site: Any) -> None:
    page = await new_device()
    path = "/hostile/sourdough"
    site.pages[path] = ("text/html; charset=utf-8", HOSTILE_PAGE.encode())
    url = site.url(path)
    await add_link(page, url)
    await row(page, "127.0.0.1").get_by_role("button", name="Details").click()
    details = page.get_by_role("region", name="Bookmark details")

    # Without consent the answer is a sentence saying what to do.
    await details.get_by_role("button", name="Enrich").click()
    await expect(details).to_contain_text("Turn on “Use AI enrichment” in Settings first.")
    await page.get_by_role("button", name="Settings").click()
    settings = page.get_by_role("dialog", name="Settings")
    await expect(settings.locator("#plan-use")).to_contain_text("Free plan · 0 of 200 enrichments used this month")
    await page.get_by_role("checkbox", name="Use AI enrichment").check()
    await expect_status(page, "Synced")
    await settings.get_by_role("button", name="Close").click()

    await details.get_by_role("button", name="Enrich").click()
    await expect(details.get_by_role("heading", name="Summary")).to_be_visible(timeout=60_000)
    # The page was new to the service: one job created, counted against this month's allowance.
    await page.get_by_role("button", name="Settings").click()
    await expect(settings.locator("#plan-use")).to_contain_text("1 of 200 enrichments used this month · resets ")
    await settings.get_by_role("button", name="Close").click()
    await expect(row(page, "Sourdough at home")).to_have_count(1)

    await details.get_by_role("button", name="Read", exact=True).click()
    reader = page.get_by_role("region", name="Reader")
    frame_element = reader.locator("iframe")
    await expect(frame_element).to_have_attribute(
        "sandbox", "allow-same-origin allow-popups allow-popups-to-escape-sandbox"
    )
    frame = page.frame_locator(".reader-frame")
    await expect(frame.locator("article")).to_contain_text("Knead the dough gently")
    assert await frame.locator("script, form, input, [onerror]").count() == 0
    assert await frame.locator("a", has_text="a trap").get_attribute("href") is None
    await reader.get_by_text("XL").click()
    await expect(frame.locator("html")).to_have_class("size-xl width-narrow theme-light")
    await reader.get_by_text("Dark").click()
    await expect(frame.locator("html")).to_have_class("size-xl width-narrow theme-dark")
    assert await page.title() == "Bookmarks"
    assert await axe_violations(page) == [], describe(await axe_violations(page))
    await screenshot(page, "reader-desktop")
    await page.get_by_role("button", name="Close reader").click()
    assert page.errors == []


async def test_a_shared_link_is_saved(new_device: Any) -> None:
    page = await new_device()
    await page.goto("/?title=Shared%20from%20a%20phone&text=look%20https%3A%2F%2Fshare.example%2Fthing")
    await expect(row(page, "Shared from a phone")).to_have_count(1)
    assert page.url.endswith("/") or "#" in page.url
    await expect_status(page, "Synced")
