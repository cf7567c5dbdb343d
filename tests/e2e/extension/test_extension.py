"""The browser extension end to end: Chromium with the unpacked extension, the real stack, and a site
whose article is shown only to a logged-in browser (the server's own fetch gets a login wall).

Automation cannot click the browser's own UI, so: the popup is opened as a tab of its own for a given
tab (``popup.html?tab=ID``, the same page and code) except in the windowed test, which opens the real
one; the context menu and the keyboard shortcut are driven for real in a windowed browser (right click,
then xdotool's keys on an Xvfb display) and also invoked through their handlers in the service worker
(``bookmarksExtension.saveLink`` / ``savePage``, what the ``contextMenus.onClicked`` and
``commands.onCommand`` listeners call) in the headless ones.
"""

from __future__ import annotations

import asyncio
import shutil
from typing import Any

import httpx
import pytest
from e2e_support import Device, anonymous, expect, wait_enriched, wait_for
from extension_support import SCREENSHOTS, ExtensionBrowser, MembersSite, SwitchableProxy, Xvfb, random_word
from playwright.async_api import Page
from playwright.async_api import expect as page_expect

BADGE_SAVED = "✓"


async def sign_in_with_pairing_code(browser: ExtensionBrowser, device: Device, server_url: str) -> None:
    code = expect(await device.request("POST", "/v1/auth/pairing"), 201).json()["data"]["code"]
    options = await browser.context.new_page()
    await options.goto(browser.page_url("options.html"))
    await options.get_by_label("Server URL").fill(server_url)
    await options.locator("main").screenshot(path=str(SCREENSHOTS / "extension-options.png"))  # no code in it
    assert await browser.accessibility_problems(options) == []
    await options.get_by_label("Pairing code").fill(code)
    await options.get_by_role("button", name="Sign in with code").click()
    await page_expect(options.get_by_role("status")).to_contain_text("You're signed in")
    await options.close()


async def bookmark_of(device: Device, url: str) -> dict[str, Any] | None:
    await device.sync()
    return next((b for b in device.records.values() if b["url"] == url), None)


async def open_logged_in(browser: ExtensionBrowser, site: MembersSite, url: str) -> tuple[Page, int]:
    page = browser.context.pages[0] if browser.context.pages else await browser.context.new_page()
    await page.goto(site.url("/login"))
    await page.goto(url)
    return page, await browser.tab_id(url)


async def test_saving_a_page_behind_a_login_captures_what_the_browser_shows(
    http: httpx.AsyncClient, browser: ExtensionBrowser, members_site: MembersSite, server_path: SwitchableProxy
) -> None:
    device = await anonymous(http)
    await device.enable_ai()
    expect(await device.request("PUT", "/v1/collections/reading", json={"name": "Reading"}), 200)
    secret = random_word()
    title = "Members' guide to sourdough"
    url = members_site.add_members_page(title, f"<p>Only members read that the {secret} starter rises overnight.</p>")
    await sign_in_with_pairing_code(browser, device, server_path.url)

    page, tab_id = await open_logged_in(browser, members_site, url)
    popup = await browser.open_popup(tab_id)
    await popup.get_by_label("Tags").fill("baking, members")
    await popup.get_by_label("Collection").select_option(label="Reading")
    await popup.locator("main").screenshot(path=str(SCREENSHOTS / "extension-popup.png"))
    assert await browser.accessibility_problems(popup) == []
    await popup.get_by_role("button", name="Save page").click()
    await page_expect(popup.get_by_role("status")).to_contain_text("Saved with a copy of the page")
    await page_expect(popup.get_by_text("Saved", exact=True)).to_be_visible()
    await popup.locator("main").screenshot(path=str(SCREENSHOTS / "extension-popup-saved.png"))
    assert await browser.accessibility_problems(popup) == []

    saved = await bookmark_of(device, url)
    assert saved is not None, "the popup's save did not reach the server"
    assert saved["userTags"] == ["baking", "members"] and saved["collectionIds"] == ["reading"]
    status = await wait_enriched(device, saved["clientBookmarkId"])
    assert status["result"]["title"] == title, "enrichment read the logged-in page, not the login wall"

    # The page text is searchable once delta shows the enrichment (one transaction on the server).
    async def enriched() -> bool:
        record = await bookmark_of(device, url)
        return record is not None and record["enrichedAt"] is not None

    await wait_for(enriched, what="the enrichment applied to the bookmark")
    record = await bookmark_of(device, url)
    assert record is not None and record["title"] == title and record["snapshotStatus"] in {"ready", "completed"}
    path = url.removeprefix(members_site.url(""))
    assert all(logged_in for hit, logged_in in members_site.hits if hit == path), "only the browser loads the page"
    found = expect(await device.request("GET", "/v1/bookmarks/search", params={"q": secret}), 200).json()["data"]
    assert [r["bookmark"]["clientBookmarkId"] for r in found["results"]] == [saved["clientBookmarkId"]]
    snapshot = expect(
        await device.request(
            "GET", "/v1/enrichment/snapshot", params={"clientBookmarkId": saved["clientBookmarkId"], "kind": "html"}
        ),
        200,
    )
    assert secret in snapshot.text and "Please sign in" not in snapshot.text

    # The badge marks the saved page on reload, and under another spelling of its URL (a fresh lookup).
    await page.reload()
    await wait_for(lambda: _badge_is(browser, tab_id, BADGE_SAVED), timeout=30, what="badge after reload")
    variant = url + "?utm_source=newsletter"
    await page.goto(variant)
    await wait_for(lambda: _badge_is(browser, tab_id, BADGE_SAVED), timeout=30, what="badge from a lookup")


async def test_the_popup_of_a_saved_page_edits_and_deletes_it(
    http: httpx.AsyncClient, browser: ExtensionBrowser, members_site: MembersSite, server_path: SwitchableProxy
) -> None:
    device = await anonymous(http)
    await sign_in_with_pairing_code(browser, device, server_path.url)
    url = members_site.add_public_page("A page to edit", "<p>Some text.</p>")
    page, tab_id = await open_logged_in(browser, members_site, url)
    popup = await browser.open_popup(tab_id)
    await popup.get_by_role("button", name="Save page").click()
    await page_expect(popup.get_by_role("button", name="Save changes")).to_be_visible()
    await popup.close()

    popup = await browser.open_popup(tab_id)
    await page_expect(popup.get_by_role("button", name="Delete")).to_be_visible()
    await popup.get_by_label("Tags").fill("edited")
    await popup.get_by_label("Tags").press("Enter")  # the keyboard submits the form like the button
    await page_expect(popup.get_by_role("status")).to_contain_text("Changes saved")
    saved = await bookmark_of(device, url)
    assert saved is not None and saved["userTags"] == ["edited"]

    await popup.get_by_role("button", name="Delete").click()
    await page_expect(popup.get_by_role("status")).to_contain_text("Deleted")
    assert await bookmark_of(device, url) is None
    assert saved["clientBookmarkId"] in device.deleted
    await wait_for(lambda: _badge_is(browser, tab_id, ""), timeout=30, what="badge cleared after delete")
    await page.close()


async def test_context_menu_and_shortcut_save_through_their_handlers(
    http: httpx.AsyncClient, browser: ExtensionBrowser, members_site: MembersSite, server_path: SwitchableProxy
) -> None:
    device = await anonymous(http)
    await device.enable_ai()
    await sign_in_with_pairing_code(browser, device, server_path.url)
    linked = members_site.add_public_page("Linked page", "<p>Linked.</p>")
    url = members_site.add_public_page("Page with a link", f'<p><a href="{linked}">a link</a></p>')
    page, tab_id = await open_logged_in(browser, members_site, url)

    info = {"menuItemId": "save-link", "linkUrl": linked, "pageUrl": url, "editable": False}
    outcome = await browser.worker.evaluate(
        "async ([info, tabId]) => bookmarksExtension.saveLink(info, await chrome.tabs.get(tabId))", [info, tab_id]
    )
    assert outcome["state"] == "saved" and outcome["capture"] == "not-asked"
    assert await bookmark_of(device, linked) is not None

    commands = await browser.worker.evaluate("chrome.commands.getAll()")
    assert any(c["name"] == "save-page" and c["shortcut"] for c in commands), commands
    outcome = await browser.worker.evaluate(
        "async (tabId) => bookmarksExtension.savePage(await chrome.tabs.get(tabId))", tab_id
    )
    assert outcome["state"] == "saved" and outcome["capture"] == "captured", outcome
    saved = await bookmark_of(device, url)
    assert saved is not None and saved["title"] == "Page with a link"
    assert await browser.badge(tab_id) == BADGE_SAVED
    await page.close()


async def test_a_page_saved_offline_arrives_after_reconnect(
    http: httpx.AsyncClient, browser: ExtensionBrowser, members_site: MembersSite, server_path: SwitchableProxy
) -> None:
    device = await anonymous(http)
    await sign_in_with_pairing_code(browser, device, server_path.url)
    url = members_site.add_public_page("Read on the train", "<p>Saved without a network.</p>")
    page, tab_id = await open_logged_in(browser, members_site, url)

    server_path.set_offline(True)
    popup = await browser.open_popup(tab_id)
    await popup.get_by_label("Tags").fill("train")
    await popup.get_by_role("button", name="Save page").click()
    await page_expect(popup.get_by_role("status")).to_contain_text("You're offline")
    await page_expect(popup.get_by_text("1 save waiting to be sent.")).to_be_visible()
    await popup.get_by_label("Tags").fill("train, later")
    await popup.get_by_role("button", name="Save changes").click()  # queued under the same id
    await page_expect(popup.get_by_text("2 saves waiting to be sent.")).to_be_visible()
    await popup.locator("main").screenshot(path=str(SCREENSHOTS / "extension-popup-offline.png"))
    queue = (await browser.storage("local"))["queue"]
    assert [w["body"]["url"] for w in queue] == [url, url]
    assert queue[0]["id"] == queue[1]["id"]
    assert await bookmark_of(device, url) is None

    # Back online, the retry alarm sends the queue with the id the write was given offline.
    server_path.set_offline(False)

    # Both queued writes are sent in order; the queue empties only after the second one's answer.
    async def sent() -> bool:
        return (await browser.storage("local")).get("queue") == []

    await wait_for(sent, timeout=150, interval=2, what="the offline queue sent")
    saved = await bookmark_of(device, url)
    assert saved is not None
    assert saved["clientBookmarkId"] == queue[0]["id"] and saved["userTags"] == ["train", "later"]
    await page.close()


async def test_start_a_new_library_keeps_the_refresh_token_only_in_local_storage(
    browser: ExtensionBrowser, members_site: MembersSite, server_path: SwitchableProxy
) -> None:
    url = members_site.add_public_page("Before signing in", "<p>Text.</p>")
    _, tab_id = await open_logged_in(browser, members_site, url)
    popup = await browser.open_popup(tab_id)
    await page_expect(popup.get_by_text("Sign in to start saving pages.")).to_be_visible()
    await page_expect(popup.get_by_role("button", name="Open options")).to_be_visible()
    await popup.close()

    options = await browser.context.new_page()
    await options.goto(browser.page_url("options.html"))
    await page_expect(options.get_by_label("Server URL")).to_have_value("http://127.0.0.1:8080")
    await options.get_by_label("Server URL").fill(server_path.url)
    await options.get_by_role("button", name="Start a new library").click()
    await page_expect(options.get_by_role("status")).to_contain_text("You're signed in")
    local, session = await browser.storage("local"), await browser.storage("session")
    assert local["serverUrl"] == server_path.url and local["account"]["refreshToken"]
    assert "accessToken" not in local and session["accessToken"]
    granted = await browser.worker.evaluate(
        "(origin) => chrome.permissions.contains({origins: [origin]})", f"{server_path.url}/*"
    )
    assert granted is True

    await options.get_by_role("button", name="Sign out").click()
    await page_expect(options.get_by_role("button", name="Start a new library")).to_be_visible()
    assert "account" not in await browser.storage("local")


async def test_the_toolbar_shows_the_badge_and_the_popup_of_a_saved_page(
    http: httpx.AsyncClient,
    windowed_browser: ExtensionBrowser,
    members_site: MembersSite,
    server_path: SwitchableProxy,
    xvfb: Xvfb,
) -> None:
    browser = windowed_browser
    device = await anonymous(http)
    await device.enable_ai()
    expect(await device.request("PUT", "/v1/collections/reading", json={"name": "Reading"}), 200)
    await sign_in_with_pairing_code(browser, device, server_path.url)
    url = members_site.add_members_page("Members' guide to sourdough", "<p>Only members read this.</p>")
    page, tab_id = await open_logged_in(browser, members_site, url)
    popup = await browser.open_popup(tab_id)
    await popup.get_by_label("Tags").fill("baking, members")
    await popup.get_by_label("Collection").select_option(label="Reading")
    await popup.get_by_role("button", name="Save page").click()
    await page_expect(popup.get_by_role("status")).to_contain_text("Saved")
    await popup.close()
    await page.bring_to_front()
    await wait_for(lambda: _badge_is(browser, tab_id, BADGE_SAVED), timeout=30, what="badge after saving")

    # The real popup, opened on its toolbar button, over the page: the badge and the "Saved" state.
    await browser.worker.evaluate("chrome.action.openPopup()")

    async def popup_ready() -> bool:
        state = await browser.worker.evaluate(
            "chrome.runtime.getContexts({contextTypes: ['POPUP']}).then((c) => c.length)"
        )
        return bool(state)

    await wait_for(popup_ready, timeout=30, what="the popup open")
    await asyncio.sleep(1.5)  # the popup's first paint (not an assertion: only the picture waits for it)
    xvfb.grab(SCREENSHOTS / "extension-badge.png", (600, 0, 1280, 560))  # the toolbar's right end


async def test_the_keyboard_shortcut_saves_and_captures_the_page(
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
    await device.enable_ai()
    await sign_in_with_pairing_code(browser, device, server_path.url)
    secret = random_word()
    url = members_site.add_members_page("Saved with a shortcut", f"<p>The {secret} shortcut saves this page.</p>")
    page, tab_id = await open_logged_in(browser, members_site, url)
    await page.bring_to_front()

    xvfb.press("alt+shift+s")  # the manifest's suggested key for "Save this page"

    saved = await wait_for(lambda: bookmark_of(device, url), what="the page saved by the shortcut")
    assert saved["title"] == "Saved with a shortcut"
    await wait_for(lambda: _badge_is(browser, tab_id, BADGE_SAVED), timeout=30, what="badge after the shortcut")
    status = await wait_enriched(device, saved["clientBookmarkId"])
    assert status["result"]["title"] == "Saved with a shortcut", "the capture is the logged-in page"
    snapshot = await device.request(
        "GET", "/v1/enrichment/snapshot", params={"clientBookmarkId": saved["clientBookmarkId"], "kind": "html"}
    )
    assert secret in expect(snapshot, 200).text


async def test_the_context_menu_item_saves_the_link(
    http: httpx.AsyncClient,
    windowed_browser: ExtensionBrowser,
    members_site: MembersSite,
    server_path: SwitchableProxy,
    xvfb: Xvfb,
) -> None:
    if shutil.which("xdotool") is None:
        pytest.skip("no xdotool (Debian's package; .ci/run installs it): the menu cannot be driven")
    browser = windowed_browser
    device = await anonymous(http)
    await sign_in_with_pairing_code(browser, device, server_path.url)
    linked = members_site.add_public_page("Linked from a menu", "<p>Linked.</p>")
    url = members_site.add_public_page("Page with a link", f'<p><a id="link" href="{linked}">a link</a></p>')
    page, _ = await open_logged_in(browser, members_site, url)
    await page.bring_to_front()

    windows = xvfb.visible_windows()
    await page.click("#link", button="right")  # the browser's own context menu opens, in a window of its own

    async def menu_open() -> bool:
        return bool(xvfb.visible_windows() - windows)

    # Keys sent before the menu holds the keyboard would go to the page.
    await wait_for(menu_open, timeout=30, what="the context menu open")
    # The extensions' items sit just above the developer tools' "Inspect", the menu's last item.
    xvfb.keys("Up", "Up", "Return")

    saved = await wait_for(lambda: bookmark_of(device, linked), what="the link saved from the context menu")
    assert saved["url"] == linked


async def _badge_is(browser: ExtensionBrowser, tab_id: int, text: str) -> bool:
    return await browser.badge(tab_id) == text
