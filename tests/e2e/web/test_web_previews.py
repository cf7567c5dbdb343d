"""Link previews in the web app, without AI: a pasted link shows its page's title, description and
picture (the platform's copy) within seconds; a title the person typed stays; a link saved offline gets
its preview once the network is back. With AI on, new links are enriched without pressing "Enrich".
Pictures come from the platform only: the page's policy says so, and while the list, the details and
the reader are shown the browser never contacts a saved site."""

from __future__ import annotations

import html
import re
import struct
import time
import uuid
import zlib
from typing import Any

from playwright.async_api import expect
from web_support import add_link, axe_violations, describe, expect_status, row, screenshot

from devstack.testing import eventually

# How long a journey waits for a preview: a bound on waiting, not a speed check (tests assert no
# timings; the three-second promise is measured by bench/webapp.py, "paste → preview").
PREVIEW_WAIT_SECONDS = 20.0
PLATFORM_IMAGE = re.compile(r"^/v1/previews/images/[0-9a-f]{64}\.webp$")


def png(width: int, height: int, top: tuple[int, int, int], bottom: tuple[int, int, int]) -> bytes:
    """A real PNG (a vertical gradient): the server decodes and re-encodes what it serves."""
    rows = bytearray()
    for y in range(height):
        f = y / max(1, height - 1)
        pixel = bytes(round(a + (b - a) * f) for a, b in zip(top, bottom, strict=True))
        rows += b"\x00" + pixel * width

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(rows))) + chunk(b"IEND", b"")
    )


def preview_page(
    site: Any,
    title: str,
    description: str,
    colors: tuple[tuple[int, int, int], tuple[int, int, int]] = ((233, 150, 80), (120, 60, 30)),
    body: str = "",
) -> str:
    """Serve a page with og:title, og:description and an og:image PNG on the local site; its URL."""
    key = uuid.uuid4().hex
    site.pages[f"/pictures/{key}.png"] = ("image/png", png(240, 160, *colors))
    page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>{html.escape(title)} | Test kitchen</title>
<meta property="og:title" content="{html.escape(title)}">
<meta property="og:description" content="{html.escape(description)}">
<meta property="og:image" content="/pictures/{key}.png">
</head><body><article><h1>{html.escape(title)}</h1>
<p>{html.escape(description)} Flour, water, salt and time are all it takes; the rest is patience.</p>
<p>Keep the dough covered, fold it every half hour, and let the cold do the slow work overnight.</p>
{body}</article></body></html>"""
    path = f"/kitchen/{key}"
    site.pages[path] = ("text/html; charset=utf-8", page.encode())
    return str(site.url(path))


def ms_left(deadline: float) -> float:
    """Milliseconds until ``deadline``, at least one (Playwright reads a timeout of 0 as none)."""
    return max(1.0, (deadline - time.monotonic()) * 1000)


async def expect_picture(item: Any, timeout: float = 10_000) -> str:
    """The row's thumbnail is a platform picture, same origin, and it loaded; its src."""
    image = item.locator("img.thumb")
    await expect(image).to_have_attribute("src", PLATFORM_IMAGE, timeout=timeout)
    loaded = await image.evaluate(
        "async (img) => { await img.decode().catch(() => null); "
        "return img.naturalWidth > 0 && new URL(img.src).origin === location.origin; }"
    )
    assert loaded, "the picture did not load from the platform's origin"
    src: str = await image.get_attribute("src")
    return src


async def test_a_pasted_link_shows_its_title_description_and_picture(new_device: Any, site: Any) -> None:
    page = await new_device()
    title, description = "Proofing dough in a cold kitchen", "Slow, cool proofing for a better crumb."
    url = preview_page(site, title, description)

    deadline = time.monotonic() + PREVIEW_WAIT_SECONDS
    await add_link(page, url)
    await expect(row(page, "127.0.0.1")).to_contain_text(re.compile(f"Fetching title…|{title}"))
    await expect(row(page, title)).to_contain_text(description, timeout=ms_left(deadline))
    await expect_picture(row(page, title), timeout=ms_left(deadline))
    await expect(row(page, title)).not_to_contain_text("Fetching title…")
    # Written as an ordinary edit: it reaches the server like any other change.
    await expect_status(page, "Synced")

    # Two more for the picture of the list, and the details panel shows the picture too.
    for more_title, more_description, colors in (
        ("Rye starters, explained", "Feeding schedules that fit a busy week.", ((90, 140, 200), (30, 50, 110))),
        ("The crumb shot", "What the inside of a loaf tells you.", ((120, 190, 120), (30, 90, 50))),
    ):
        await add_link(page, preview_page(site, more_title, more_description, colors))
        await expect(row(page, more_title)).to_contain_text(more_description)
        await expect_picture(row(page, more_title))
    await add_link(page, "https://no-preview.example/plain")  # a page that cannot be had shows its URL
    await expect(row(page, "no-preview.example/plain")).not_to_contain_text("Fetching title…", timeout=30_000)
    await expect_status(page, "Synced")
    assert await axe_violations(page) == [], describe(await axe_violations(page))
    await screenshot(page, "list-previews-desktop")

    await row(page, title).get_by_role("button", name="Details").click()
    details = page.get_by_role("region", name="Bookmark details")
    await expect(details.locator("img.details-picture")).to_have_attribute("src", PLATFORM_IMAGE)
    await expect(details.get_by_role("textbox", name="Title")).to_have_value(title)
    await expect(details).to_contain_text(description)
    assert page.errors == []


async def test_a_title_the_person_typed_is_kept(new_device: Any, site: Any) -> None:
    page = await new_device()
    url = preview_page(site, "The page's own title", "A description only the page has.")
    await page.get_by_role("textbox", name="URL").fill(url)
    await page.get_by_role("button", name="More").click()
    await page.get_by_role("textbox", name="Title").fill("My bread notes")
    await page.get_by_role("button", name="Save").click()

    mine = row(page, "My bread notes")
    await expect(mine).to_contain_text("A description only the page has.")
    await expect_picture(mine)
    await expect_status(page, "Synced")
    await expect(row(page, "The page's own title")).to_have_count(0)
    # After a reload (the library as the device stored it, and as the server sent it back) still the same.
    await page.reload()
    await expect(row(page, "My bread notes")).to_contain_text("A description only the page has.")
    await expect(row(page, "The page's own title")).to_have_count(0)


async def test_a_link_saved_offline_gets_its_preview_when_the_network_returns(new_device: Any, site: Any) -> None:
    page = await new_device()
    title, description = "Baking on a camping stove", "Bread without an oven, on the road."
    url = preview_page(site, title, description)
    # The worker controls the page after the first visit, so the app also opens offline.
    assert await eventually(lambda: page.evaluate("() => navigator.serviceWorker.controller !== null"), timeout=20)

    await page.context.set_offline(True)
    await expect_status(page, "Offline")
    await add_link(page, url)
    item = row(page, "127.0.0.1")
    await expect(item).to_contain_text("Not synced")
    await expect(item).not_to_contain_text("Fetching title…")  # nothing is on its way while offline
    # The link's wait for its preview is kept on the device: a reload does not lose it.
    await page.reload()
    await page.get_by_role("list", name="Bookmarks").wait_for(state="attached")
    await expect(row(page, "127.0.0.1")).to_have_count(1)

    await page.context.set_offline(False)
    await expect(row(page, title)).to_contain_text(description, timeout=30_000)
    await expect_picture(row(page, title))
    await expect_status(page, "Synced")


async def test_with_ai_on_new_links_are_enriched_without_a_click(new_device: Any, site: Any) -> None:
    page = await new_device()
    enqueued: list[str] = []
    page.on("request", lambda r: enqueued.append(r.url) if r.url.endswith("/v1/enrichment/enqueue") else None)

    await page.get_by_role("button", name="Settings").click()
    settings = page.get_by_role("dialog", name="Settings")
    automatic = settings.get_by_role("checkbox", name="Enrich new links automatically")
    await expect(settings.get_by_role("checkbox", name="Use AI enrichment")).to_be_enabled()
    await expect(automatic).to_have_count(0)  # offered once AI enrichment is on
    await settings.get_by_role("checkbox", name="Use AI enrichment").check()
    await expect(automatic).to_be_checked()
    assert await axe_violations(page) == [], describe(await axe_violations(page))
    await settings.get_by_role("button", name="Close").click()

    url = site.add_article("Enriched while you look elsewhere")
    await add_link(page, url)
    await row(page, "127.0.0.1").get_by_role("button", name="Details").click()
    details = page.get_by_role("region", name="Bookmark details")
    await expect(details.get_by_role("heading", name="Summary")).to_be_visible(timeout=60_000)
    assert len(enqueued) == 1, enqueued
    await expect(page.get_by_text("You've used this month's AI enrichments")).to_have_count(0)
    assert page.errors == []


async def test_pictures_come_from_the_platform_only(new_device: Any, site: Any) -> None:
    page = await new_device()
    response = await page.reload()
    policy = response.headers["content-security-policy"]
    img_src = next(d.strip() for d in policy.split(";") if d.strip().startswith("img-src"))
    assert img_src == "img-src 'self' data: blob:", policy

    origin = site.url("")
    contacted: list[str] = []
    page.context.on("request", lambda r: contacted.append(r.url) if r.url.startswith(origin) else None)

    # A page whose saved copy holds pictures of its own site, read after enrichment.
    inline = f'<img src="/pictures/inline.png" alt="a loaf"><img src="{origin}/pictures/absolute.png" alt="">'
    title = "A loaf with pictures"
    url = preview_page(site, title, "Pictures inside the page.", body=inline)
    await page.get_by_role("button", name="Settings").click()
    settings = page.get_by_role("dialog", name="Settings")
    await settings.get_by_role("checkbox", name="Use AI enrichment").check()
    await expect(settings.get_by_role("checkbox", name="Enrich new links automatically")).to_be_checked()
    await settings.get_by_role("button", name="Close").click()
    await add_link(page, url)
    await row(page, "127.0.0.1").get_by_role("button", name="Details").click()
    details = page.get_by_role("region", name="Bookmark details")
    await expect(details.get_by_role("heading", name="Summary")).to_be_visible(timeout=60_000)
    await expect_status(page, "Synced")

    # The list and the details: a platform picture or the letter tile, never the site's address.
    for image in await page.locator("img").all():
        src = await image.get_attribute("src") or ""
        assert not src.startswith(("http:", "https:", "//")), src
    await details.get_by_role("button", name="Read", exact=True).click()
    frame = page.frame_locator(".reader-frame")
    await expect(frame.locator("article")).to_contain_text("fold it every half hour")
    await expect(frame.locator("img")).to_have_count(0)
    await page.get_by_role("button", name="Close reader").click()
    await expect_status(page, "Synced")
    assert contacted == [], contacted
    assert page.errors == []
