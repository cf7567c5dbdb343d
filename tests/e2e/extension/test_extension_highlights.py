"""Highlights on the live page, end to end: Chromium with the built extension, the real stack, and local
test pages served by the test (one whose text changes between two visits, one whose own script looks
for anything of the library).

Headless, the tests call the function the context menu's and the shortcut's listeners call
(``bookmarksExtension.highlightTab`` in the service worker) after selecting text in the page, and the test
build's host access to 127.0.0.1 stands in for the site access a person grants at their first highlight
there. The windowed test (Xvfb, xdotool) presses the real shortcut and picks the real menu item on a page
served as localhost, a site the build has no access to, and clicks "Allow" on the browser's prompt.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from typing import Any

import httpx
import pytest
from e2e_support import Device, anonymous, expect, wait_for
from extension_support import SCREENSHOTS, ExtensionBrowser, MembersSite, SwitchableProxy, Xvfb, random_word
from playwright.async_api import Page
from playwright.async_api import expect as page_expect

MARKS = "mark.bookmarks-highlight"

FIRST = "Tidal pools hold anemones, crabs and small fish between the tides"
SECOND = "the rocks are slippery after the rain"
THIRD = "Rangers close the path at dusk in winter"
FIRST_EDITED = "Tidal pools hold anemones, crabs and tiny fish between the tides"


def article(first: str, extra: str = "", third: bool = True) -> str:
    return (
        f"{extra}<p>{first}, and a patient visitor sees them feed.</p>"
        f"<p>Walk slowly: <em>{SECOND}</em>, and the tide comes in fast.</p>"
        + (f"<p>{THIRD}; the car park stays open.</p>" if third else "")
        + "<p>Bring water and a hat.</p>"
    )


async def sign_in(browser: ExtensionBrowser, device: Device, server_url: str) -> None:
    code = expect(await device.request("POST", "/v1/auth/pairing"), 201).json()["data"]["code"]
    options = await browser.context.new_page()
    await options.goto(browser.page_url("options.html"))
    await options.get_by_label("Server URL").fill(server_url)
    await options.get_by_label("Pairing code").fill(code)
    await options.get_by_role("button", name="Sign in with code").click()
    await page_expect(options.get_by_role("status")).to_contain_text("You're signed in")
    await options.close()


async def select_text(page: Page, text: str) -> None:
    """Selects the first occurrence of ``text`` in the page, as a person dragging over it would."""
    found = await page.evaluate(
        """(text) => {
            const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
            while (walker.nextNode()) {
                const node = walker.currentNode, at = node.data.indexOf(text);
                if (at < 0) continue;
                const range = document.createRange();
                range.setStart(node, at);
                range.setEnd(node, at + text.length);
                getSelection().removeAllRanges();
                getSelection().addRange(range);
                return true;
            }
            return false;
        }""",
        text,
    )
    assert found, f"{text!r} is not on the page"


async def highlight(browser: ExtensionBrowser, page: Page, tab_id: int, text: str) -> dict[str, Any]:
    await select_text(page, text)
    outcome = await browser.worker.evaluate(
        "async (tabId) => bookmarksExtension.highlightTab(await chrome.tabs.get(tabId))", tab_id
    )
    assert outcome is not None, "the highlight failed (the badge shows why)"
    return dict(outcome)


async def marked(page: Page) -> list[str]:
    return [str(t) for t in await page.locator(MARKS).all_text_contents()]


async def server_highlights(device: Device) -> dict[str, dict[str, Any]]:
    """Every live highlight of the account, from the delta stream."""
    found: dict[str, dict[str, Any]] = {}
    cursor: str | None = None
    while True:
        params = {"limit": "500", **({"cursor": cursor} if cursor else {})}
        page = expect(await device.request("GET", "/v1/bookmarks/delta", params=params), 200).json()["data"]
        for record in page["highlights"]:
            found[record["id"]] = record
        for tombstone in page["highlightTombstones"]:
            found.pop(tombstone["id"], None)
        if page["nextCursor"] is None:
            return found
        cursor = page["nextCursor"]


async def test_highlights_are_drawn_again_on_the_changed_page_and_listed_in_the_popup(
    http: httpx.AsyncClient, browser: ExtensionBrowser, members_site: MembersSite, server_path: SwitchableProxy
) -> None:
    device = await anonymous(http)
    await sign_in(browser, device, server_path.url)
    url = members_site.add_public_page("Tide pools at Seal Cove", article(FIRST))
    path = url.removeprefix(members_site.url(""))
    page = browser.context.pages[0] if browser.context.pages else await browser.context.new_page()
    await page.goto(url)
    tab_id = await browser.tab_id(url)

    # The page is not saved yet: highlighting saves it first (with its capture), then highlights.
    first = await highlight(browser, page, tab_id, FIRST)
    assert first["savedPage"] is True and first["state"] == "saved" and first["drawn"] is True, first
    assert await marked(page) == [FIRST]
    second = await highlight(browser, page, tab_id, SECOND)
    assert second["savedPage"] is False and second["bookmarkId"] == first["bookmarkId"], second
    third = await highlight(browser, page, tab_id, THIRD)
    assert await marked(page) == [FIRST, SECOND, THIRD]

    on_server = await server_highlights(device)
    assert {h["id"]: h["quote"] for h in on_server.values()} == {
        first["id"]: FIRST,
        second["id"]: SECOND,
        third["id"]: THIRD,
    }
    record = on_server[second["id"]]
    assert record["bookmarkId"] == first["bookmarkId"] and record["color"] == "yellow"
    assert record["prefix"].endswith("Walk slowly: ") and record["suffix"].startswith(", and the tide")

    # Another device adds a highlight with a note (the web app would).
    note = "Go at low tide <b>only</b>"
    expect(
        await device.request(
            "PUT",
            f"/v1/highlights/{random_word()}",
            json={"bookmarkId": first["bookmarkId"], "quote": "Bring water", "color": "green", "note": note},
        ),
        200,
    )

    # Between the visits the page changed: a word of the first passage was edited, the third removed.
    members_site.public[path] = (
        "Tide pools at Seal Cove",
        article(FIRST_EDITED, "<p>Updated in May.</p>", third=False),
    )
    await page.reload()
    await page_expect(page.locator(MARKS)).to_have_count(3, timeout=30_000)
    assert await marked(page) == [FIRST_EDITED, SECOND, "Bring water"]
    await page.locator("article").screenshot(path=str(SCREENSHOTS / "extension-highlights-page.png"))

    popup = await browser.open_popup(tab_id)
    section = popup.get_by_role("region", name="Highlights (4)")
    await page_expect(section).to_be_visible()
    await page_expect(section.get_by_text("1 not found on this page")).to_be_visible()
    items = section.get_by_role("listitem")
    await page_expect(items).to_have_count(4)
    texts = [" ".join(t.split()) for t in await items.all_inner_texts()]
    assert texts[0] == f"“{FIRST}” Yellow", texts
    assert texts[1] == f"“{SECOND}” Yellow", texts
    assert texts[2] == f"“Bring water” {note} Green", texts  # the note is text, never markup
    assert texts[3] == f"“{THIRD}” Yellow · Not found on this page", texts
    assert await section.locator("b").count() == 0
    # The test build has the site's access (as after "Allow"): no button offers it.
    await page_expect(section.get_by_role("button", name="Show highlights on every visit")).to_be_hidden()
    await popup.locator("main").screenshot(path=str(SCREENSHOTS / "extension-popup-highlights.png"))
    assert await browser.accessibility_problems(popup) == []
    await popup.close()
    await page.close()


# The test page's own script: it keeps what the page looked like before the extension drew, listens
# for messages, and reports everything it can find afterwards, then tries to make the content script
# draw by forging requests.
PROBE = """
<script>
(() => {
  const baseline = new Set(Object.getOwnPropertyNames(window));
  const messages = [];
  window.addEventListener("message", (event) => messages.push(JSON.stringify(event.data)));
  document.addEventListener("bookmarks", (event) => messages.push("custom event"));
  const mutations = [];
  new MutationObserver((records) => {
    for (const r of records) if (r.type === "attributes") mutations.push(r.attributeName);
  }).observe(document.documentElement, { attributes: true, subtree: true });
  window.probe = () => {
    const attributes = [];
    for (const element of document.querySelectorAll("*")) {
      for (const name of element.getAttributeNames()) {
        attributes.push([element.tagName.toLowerCase(), name, element.getAttribute(name)]);
      }
    }
    const chromeApi = typeof chrome === "undefined" ? null : chrome;
    return {
      globals: Object.getOwnPropertyNames(window).filter((name) => !baseline.has(name) && !["probe", "forge"].includes(name)),
      attributes,
      messages,
      mutations,
      html: document.documentElement.outerHTML,
      styleSheets: document.styleSheets.length,
      runtime: Boolean(chromeApi && chromeApi.runtime && chromeApi.runtime.sendMessage),
      marks: Array.from(document.querySelectorAll("mark")).map((m) => m.textContent),
    };
  };
  window.forge = () => {
    const items = [{ key: 0, quote: "forged passage", prefix: "", suffix: "", color: "pink" }];
    window.postMessage({ type: "draw", items }, "*");
    document.dispatchEvent(new CustomEvent("bookmarks", { detail: { type: "draw", items } }));
  };
})();
</script>
"""


async def test_the_page_finds_nothing_of_the_library(
    http: httpx.AsyncClient, browser: ExtensionBrowser, members_site: MembersSite, server_path: SwitchableProxy
) -> None:
    device = await anonymous(http)
    await sign_in(browser, device, server_path.url)
    secret_note = random_word()
    other_quote = random_word()
    body = "<p>A forged passage sits here. The marked passage is this one.</p>" + PROBE
    url = members_site.add_public_page("A curious page", body)
    page = browser.context.pages[0] if browser.context.pages else await browser.context.new_page()
    await page.goto(url)
    tab_id = await browser.tab_id(url)

    outcome = await highlight(browser, page, tab_id, "marked passage")
    bookmark_id = outcome["bookmarkId"]
    # A note on this highlight and a highlight of another page, both in the library.
    expect(
        await device.request(
            "PUT",
            f"/v1/highlights/{outcome['id']}",
            json={"bookmarkId": bookmark_id, "quote": "marked passage", "note": secret_note},
        ),
        200,
    )
    other = await device.put(random_word(), {"url": members_site.url("/public/elsewhere")})
    expect(
        await device.request(
            "PUT",
            f"/v1/highlights/{random_word()}",
            json={"bookmarkId": other["clientBookmarkId"], "quote": other_quote},
        ),
        200,
    )

    await page.reload()  # drawn again by the background, with the note and the other page in its copy
    await page_expect(page.locator(MARKS)).to_have_count(1, timeout=30_000)
    popup = await browser.open_popup(tab_id)  # the popup asks the background, which draws once more
    await page_expect(popup.get_by_role("region", name="Highlights (1)")).to_be_visible()
    await popup.close()
    await page.evaluate("forge()")
    await page.wait_for_timeout(500)
    found = await page.evaluate("probe()")

    assert found["globals"] == [], found["globals"]
    # Only the page's own forgeries: nothing of the extension's was posted to the window.
    forged = '{"type":"draw","items":[{"key":0,"quote":"forged passage","prefix":"","suffix":"","color":"pink"}]}'
    assert sorted(found["messages"]) == ["custom event", forged], found["messages"]
    assert found["marks"] == ["marked passage"], "a forged request drew nothing"
    assert found["runtime"] is False, "the page cannot reach the extension's runtime"
    assert found["styleSheets"] == 0, "the marks' colors are not a stylesheet of the page"
    assert found["mutations"] == [], "no attribute of the page was set or changed"
    marks = [a for a in found["attributes"] if a[0] == "mark"]
    assert marks == [["mark", "class", "bookmarks-highlight bookmarks-highlight-yellow"]], marks
    assert not [a for a in found["attributes"] if a[1].startswith("data-")], found["attributes"]
    text = json.dumps(found)
    for secret in (secret_note, other_quote, bookmark_id, outcome["id"], device.token, server_path.url):
        assert secret not in text, f"the page found {secret!r}"
    await page.close()


# Where Chromium draws the permission dialog's buttons in a 1280x720 window at 0,0 (the dialog is part of
# the browser's window, so keys sent to it reach the page instead).
DENY_BUTTON = (734, 256)
ALLOW_BUTTON = (812, 256)


COUNT_REQUESTS = """() => {
    const request = chrome.permissions.request.bind(chrome.permissions);
    globalThis.permissionRequests = 0;
    chrome.permissions.request = (...args) => { globalThis.permissionRequests += 1; return request(...args); };
}"""


def move_pointer(xvfb: Xvfb, where: tuple[int, int]) -> None:
    env = {**os.environ, "DISPLAY": xvfb.display}
    subprocess.run(["xdotool", "mousemove", "--sync", str(where[0]), str(where[1])], env=env, check=True)


def click_on_screen(xvfb: Xvfb, where: tuple[int, int]) -> None:
    move_pointer(xvfb, where)
    subprocess.run(["xdotool", "click", "1"], env={**os.environ, "DISPLAY": xvfb.display}, check=True)
    move_pointer(xvfb, (1270, 710))  # out of the way of what opens next


async def test_the_shortcut_and_the_context_menu_item_highlight_and_the_site_is_asked_for(
    http: httpx.AsyncClient,
    windowed_browser: ExtensionBrowser,
    members_site: MembersSite,
    server_path: SwitchableProxy,
    xvfb: Xvfb,
) -> None:
    if shutil.which("xdotool") is None:
        pytest.skip("no xdotool (Debian's package; .ci/run installs it): keys cannot reach the browser's window")
    browser = windowed_browser
    device = await anonymous(http)
    await sign_in(browser, device, server_path.url)
    # Served as localhost: a site the test build has no host access to, as for a person.
    url = members_site.add_public_page("Pressed keys", article(FIRST)).replace("127.0.0.1", "localhost")
    origin = f"http://localhost:{members_site.port}"
    page = browser.context.pages[0] if browser.context.pages else await browser.context.new_page()
    await page.goto(url)
    await page.bring_to_front()
    await select_text(page, FIRST)
    xvfb.press("alt+shift+h")  # the manifest's suggested key for "Highlight the selected text"
    await page_expect(page.locator(MARKS)).to_have_count(1, timeout=30_000)  # drawn with activeTab's access

    # The browser asks for the site (a dialog inside the window); the person declines.
    await asyncio.sleep(1.5)  # the dialog's first paint (only the picture waits for it)
    xvfb.grab(SCREENSHOTS / "extension-highlight-site-prompt.png", (0, 0, 1280, 320))
    click_on_screen(xvfb, DENY_BUTTON)

    async def declined() -> bool:
        return (await browser.storage("local")).get("declinedSites") == [origin]

    await wait_for(declined, timeout=30, what="the declined site remembered")
    # Not asked again at the next highlight there: the worker's permission requests are counted.
    await browser.worker.evaluate(COUNT_REQUESTS)
    await select_text(page, THIRD)
    xvfb.press("alt+shift+h")
    await page_expect(page.locator(MARKS)).to_have_count(2, timeout=30_000)
    assert await browser.worker.evaluate("globalThis.permissionRequests") == 0
    counted = "async () => { await chrome.permissions.request({origins: ['http://example.com/*']}).catch(() => null); return globalThis.permissionRequests; }"
    assert await browser.worker.evaluate(counted) == 1, "the counter sees the worker's requests"

    # The popup offers the site's access instead; allowed there, a reload draws the highlights.
    tab_id = await browser.tab_id(url)
    popup = await browser.open_popup(tab_id)
    await page_expect(popup.get_by_role("region", name="Highlights (2)")).to_be_visible()
    await popup.get_by_role("button", name="Show highlights on every visit").click()
    await asyncio.sleep(1.5)
    click_on_screen(xvfb, ALLOW_BUTTON)

    async def granted() -> bool:
        site = f"{origin}/*"
        return bool(await browser.worker.evaluate("(site) => chrome.permissions.contains({origins: [site]})", site))

    await wait_for(granted, timeout=30, what="access to the site granted")
    await page_expect(popup.get_by_role("button", name="Show highlights on every visit")).to_be_hidden()
    await popup.close()
    await wait_for(lambda: _no_declined(browser), timeout=30, what="the site no longer declined")
    await page.bring_to_front()
    await page.reload()
    await page_expect(page.locator(MARKS)).to_have_count(2, timeout=30_000)  # drawn again on load

    # The context menu's "Highlight" on a selection: the extension's item sits just above "Inspect".
    await select_text(page, SECOND)
    windows = xvfb.visible_windows()
    await page.locator("em").click(button="right")

    async def menu_open() -> bool:
        return bool(xvfb.visible_windows() - windows)

    await wait_for(menu_open, timeout=30, what="the context menu open")
    xvfb.keys("Up", "Up", "Return")
    await page_expect(page.locator(MARKS)).to_have_count(3, timeout=30_000)
    assert await marked(page) == [FIRST, SECOND, THIRD]
    quotes = sorted(h["quote"] for h in (await server_highlights(device)).values())
    assert quotes == sorted([FIRST, SECOND, THIRD])


async def _no_declined(browser: ExtensionBrowser) -> bool:
    return (await browser.storage("local")).get("declinedSites") == []
