"""Highlights in the Reader: select text → "Highlight" (or the h key), marks drawn in place in their
color, the dialog "Highlight" (note, color, delete) by click or keyboard, drawn again after a reload,
made offline and synced later, the passages the page lost listed under "Not found on the page any more",
the view "Highlights" filtered by the search box; a hostile page and hostile notes stay text."""

from __future__ import annotations

import uuid
from typing import Any

from e2e_support import Device, anonymous, expect, wait_enriched
from playwright.async_api import expect as expect_ui
from web_support import axe_violations, describe, expect_status, open_library, row, screenshot, seed_session

from devstack.testing import eventually

PAGE = (
    "<!doctype html><html lang=en><head><title>Tide pools</title></head><body><article>"
    "<h1>Tide pools</h1>"
    "<p>Tide pools hold a world in a puddle. Anemones close when the water leaves them.</p>"
    "<p>Crabs hide under rocks until the tide returns and the pool fills again.</p>"
    "<p>Visit at low tide, step lightly, and put every stone back where you found it.</p>"
    "</article></body></html>"
)

HOSTILE_NOTE = "<img src=x onerror=\"parent.document.title='pwned'\"><script>document.title='pwned'</script>"
HOSTILE_PAGE = (
    "<!doctype html><html lang=en><head><title>Markup as text</title></head><body><article>"
    "<h1>Markup as text</h1>"
    "<p>Type &lt;img src=x onerror=\"parent.document.title='pwned'\"&gt; to see an image tag.</p>"
    "<script>parent.document.title = 'pwned'</script>"
    "<img src=x onerror=\"parent.document.title = 'pwned'\">"
    "<p>The rest of the page is plain.</p>"
    "</article></body></html>"
)

# Selects ``text`` (inside one text node) in the Reader's frame, as a person's drag would.
SELECT = """(text) => {
    const doc = document.querySelector(".reader-frame").contentDocument;
    const walker = doc.createTreeWalker(doc.querySelector("article"), NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const at = node.data.indexOf(text);
        if (at < 0) continue;
        const range = doc.createRange();
        range.setStart(node, at);
        range.setEnd(node, at + text.length);
        const selection = doc.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        return true;
    }
    return false;
}"""


async def enriched_device(http: Any, site: Any, path: str, html: str, title: str) -> tuple[Device, str]:
    """A library with one bookmark of ``html`` whose saved copy exists; its id."""
    device = await anonymous(http)
    await device.enable_ai()
    site.pages[path] = ("text/html; charset=utf-8", html.encode())
    url = site.url(path)
    bookmark_id = f"hl-{uuid.uuid4().hex[:12]}"
    await device.put(bookmark_id, {"url": url, "title": title})
    expect(await device.enqueue(bookmark_id, url), 202)
    await wait_enriched(device, bookmark_id)
    return device, bookmark_id


async def browser_of(new_device: Any, device: Device) -> Any:
    page = await new_device(open_app=False)
    await seed_session(page, device.session)
    await open_library(page)
    return page


async def open_reader(page: Any, title: str) -> Any:
    await row(page, title).get_by_role("button", name="Details").click()
    await page.get_by_role("region", name="Bookmark details").get_by_role("button", name="Read", exact=True).click()
    frame = page.frame_locator(".reader-frame")
    await expect_ui(frame.locator("article")).to_contain_text("plain" if title == "Markup as text" else "stone back")
    return frame


async def highlight(page: Any, text: str) -> None:
    assert await page.evaluate(SELECT, text), text
    await page.get_by_role("region", name="Reader").get_by_role("button", name="Highlight").click()


async def server_highlights(device: Device) -> list[dict[str, Any]]:
    data = expect(await device.request("GET", "/v1/bookmarks/delta", params={"limit": 1000}), 200).json()["data"]
    return list(data["highlights"])


async def test_highlight_note_color_reload_offline_orphans_and_the_highlights_view(
    new_device: Any, http: Any, site: Any
) -> None:
    device, bookmark_id = await enriched_device(http, site, "/highlights/tide-pools", PAGE, "Tide pools")
    page = await browser_of(new_device, device)
    frame = await open_reader(page, "Tide pools")
    reader = page.get_by_role("region", name="Reader")

    # Select → "Highlight": a mark around the passage, in yellow.
    await expect_ui(reader.get_by_role("button", name="Highlight")).to_have_count(0)
    await highlight(page, "the tide returns")
    mark = frame.locator("mark", has_text="the tide returns")
    await expect_ui(mark).to_have_class("hl hl-yellow")
    await expect_ui(reader.get_by_role("button", name="Highlight")).to_have_count(0)

    # Click it: the dialog "Highlight" takes a note and a color.
    await mark.click()
    dialog = page.get_by_role("dialog", name="Highlight")
    await dialog.get_by_role("textbox", name="Note").fill("Come back at low tide.")
    colors = dialog.get_by_role("radiogroup", name="Color")
    assert await colors.get_by_role("radio").count() == 5
    await colors.get_by_role("radio", name="Green").check()
    await expect_ui(mark).to_have_class("hl hl-green")
    assert await axe_violations(page) == [], describe(await axe_violations(page))
    await screenshot(page, "reader-highlight-dialog-desktop")
    # Escape closes the dialog, not the Reader.
    await page.keyboard.press("Escape")
    await expect_ui(dialog).to_have_count(0)
    await expect_ui(reader).to_be_visible()

    # The keyboard: a mark is reachable and Enter opens it; the h key highlights a selection.
    await mark.focus()
    await mark.press("Enter")
    await expect_ui(dialog.get_by_role("textbox", name="Note")).to_have_value("Come back at low tide.")
    await dialog.get_by_role("button", name="Done").click()
    await page.locator(".reader-frame").focus()
    assert await page.evaluate(SELECT, "Anemones close")
    await expect_ui(reader.get_by_role("button", name="Highlight")).to_be_visible()
    await page.keyboard.press("h")
    await expect_ui(frame.locator("mark", has_text="Anemones close")).to_have_class("hl hl-yellow")
    await expect_status(page, "Synced")

    stored = await eventually(lambda: _two_or_more(device), timeout=20)
    by_quote = {h["quote"]: h for h in stored}
    first = by_quote["the tide returns"]
    assert first["bookmarkId"] == bookmark_id
    assert (first["color"], first["note"]) == ("green", "Come back at low tide.")
    assert first["prefix"].endswith("Crabs hide under rocks until ") and first["suffix"].startswith(" and the pool")
    assert first["end"] - first["start"] == len("the tide returns")

    # A highlight whose passage the page does not have: listed under the text, not drawn.
    lost = {
        "bookmarkId": bookmark_id,
        "quote": "Starfish cling to the walls of the pool.",
        "note": "From an older copy.",
    }
    expect(await device.request("PUT", f"/v1/highlights/lost-{uuid.uuid4().hex[:8]}", json=lost), 200)
    orphans = reader.get_by_role("region", name="Not found on the page any more")
    await expect_ui(orphans).to_contain_text("Starfish cling to the walls of the pool.", timeout=20_000)
    await expect_ui(orphans).to_contain_text("From an older copy.")
    assert await frame.locator("mark", has_text="Starfish").count() == 0
    await screenshot(page, "reader-highlights-desktop")

    # After a reload the marks are drawn again, in their colors.
    await page.reload()
    await page.get_by_role("list", name="Bookmarks").wait_for(state="attached")
    frame = await open_reader(page, "Tide pools")
    await expect_ui(frame.locator("mark", has_text="the tide returns")).to_have_class("hl hl-green")
    await expect_ui(frame.locator("mark", has_text="Anemones close")).to_have_class("hl hl-yellow")
    await expect_ui(reader.get_by_role("heading", name="Not found on the page any more")).to_be_visible()

    # Offline: the highlight shows at once and waits in the queue; back online it is sent.
    await page.context.set_offline(True)
    await expect_status(page, "Offline")
    await highlight(page, "put every stone back")
    await expect_ui(frame.locator("mark", has_text="put every stone back")).to_have_count(1)
    await expect_status(page, "1 change waiting")
    await page.context.set_offline(False)
    await expect_status(page, "Synced")
    assert "put every stone back" in {h["quote"] for h in await server_highlights(device)}
    await page.get_by_role("button", name="Close reader").click()
    await page.get_by_role("button", name="Close details").click()

    # The view "Highlights": every highlight, newest first, with its note and the page's title.
    await page.get_by_role("navigation", name="Library").get_by_role("link", name="Highlights").click()
    listed = page.get_by_role("list", name="Highlights").get_by_role("listitem")
    await expect_ui(listed).to_have_count(4)
    await expect_ui(listed.first).to_contain_text("put every stone back")
    await expect_ui(listed.filter(has_text="the tide returns")).to_contain_text("Come back at low tide.")
    await expect_ui(listed.filter(has_text="the tide returns").get_by_role("link", name="Tide pools")).to_be_visible()
    await page.get_by_role("searchbox", name="Search").fill("low tide")
    await expect_ui(listed).to_have_count(1)
    await expect_ui(listed).to_contain_text("the tide returns")
    assert await axe_violations(page) == [], describe(await axe_violations(page))
    await page.get_by_role("searchbox", name="Search").fill("")
    await expect_ui(listed).to_have_count(4)
    await screenshot(page, "highlights-light-desktop")
    await page.get_by_role("searchbox", name="Search").fill("anemones")
    await listed.get_by_role("link", name="Tide pools").click()

    # From the Reader, "Delete highlight" removes it everywhere.
    frame = page.frame_locator(".reader-frame")
    await frame.locator("mark", has_text="Anemones close").click()
    await page.get_by_role("dialog", name="Highlight").get_by_role("button", name="Delete highlight").click()
    await expect_ui(frame.locator("mark", has_text="Anemones close")).to_have_count(0)
    await expect_status(page, "Synced")
    assert "Anemones close" not in {h["quote"] for h in await server_highlights(device)}
    assert page.errors == []


async def _two_or_more(device: Device) -> list[dict[str, Any]] | None:
    found = await server_highlights(device)
    return found if len(found) >= 2 and any(h["note"] for h in found) else None


async def test_a_hostile_page_and_hostile_notes_stay_text(new_device: Any, http: Any, site: Any) -> None:
    device, bookmark_id = await enriched_device(http, site, "/highlights/hostile", HOSTILE_PAGE, "Markup as text")
    page = await browser_of(new_device, device)
    dialogs: list[str] = []
    page.on("dialog", lambda d: dialogs.append(d.message))
    frame = await open_reader(page, "Markup as text")

    # The page's markup-looking text is highlighted as text; the note is markup-looking too.
    literal = "<img src=x onerror=\"parent.document.title='pwned'\">"
    await highlight(page, literal)
    mark = frame.locator("mark", has_text=literal)
    await expect_ui(mark).to_have_count(1)
    await mark.click()
    dialog = page.get_by_role("dialog", name="Highlight")
    await dialog.get_by_role("textbox", name="Note").fill(HOSTILE_NOTE)
    await dialog.get_by_role("button", name="Done").click()
    # An orphan with a hostile quote and note, from another device.
    hostile = {"bookmarkId": bookmark_id, "quote": "<script>document.title='pwned'</script>", "note": HOSTILE_NOTE}
    expect(await device.request("PUT", "/v1/highlights/hostile-orphan", json=hostile), 200)
    orphans = page.get_by_role("region", name="Not found on the page any more")
    await expect_ui(orphans).to_contain_text(hostile["quote"], timeout=20_000)
    await expect_ui(orphans).to_contain_text(HOSTILE_NOTE)
    await expect_status(page, "Synced")
    await page.get_by_role("button", name="Close reader").click()

    await page.get_by_role("navigation", name="Library").get_by_role("link", name="Highlights").click()
    listed = page.get_by_role("list", name="Highlights").get_by_role("listitem")
    await expect_ui(listed).to_have_count(2)
    # Newest first: the orphan from the other device, then the passage of the page.
    await expect_ui(listed.nth(0).locator("blockquote")).to_have_text(hostile["quote"])
    await expect_ui(listed.nth(1).locator("blockquote")).to_have_text(literal)
    await expect_ui(listed.nth(1)).to_contain_text(HOSTILE_NOTE)

    # Nothing ran and no element came from the text: no image, no script, the title untouched.
    assert await page.locator("img[src='x'], .highlight-list img, .highlight-list script").count() == 0
    await listed.nth(1).get_by_role("link", name="Markup as text").click()
    frame = page.frame_locator(".reader-frame")
    await expect_ui(frame.locator("mark", has_text=literal)).to_have_count(1)
    assert await frame.locator("img, script, [onerror]").count() == 0
    assert await page.locator("img[src='x'], [onerror]").count() == 0
    assert await page.title() == "Bookmarks"
    assert dialogs == []
    assert page.errors == []
