"""Helpers of the web app's journeys: how a person reaches things (roles and names), axe, screenshots."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from playwright.async_api import expect
from screenshots import screenshots_dir

REPO = Path(__file__).resolve().parents[3]
AXE_JS = REPO / "web" / "node_modules" / "axe-core" / "axe.min.js"
SCREENSHOTS = screenshots_dir()
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 360, "height": 740}


async def open_library(page: Any) -> None:
    await page.goto("/")
    await page.get_by_role("list", name="Bookmarks").wait_for(state="attached")
    await expect_status(page, "Synced")


def sync_status(page: Any) -> Any:
    """The sync state: the status "Sync", whose text (and description) is what it shows ("Synced", "Offline"…)."""
    return page.get_by_role("status", name="Sync", exact=True)


async def expect_status(page: Any, text: str, timeout: float = 30_000) -> None:
    await expect(sync_status(page)).to_contain_text(text, timeout=timeout)


def row(page: Any, title: str) -> Any:
    return page.get_by_role("list", name="Bookmarks").get_by_role("listitem").filter(has_text=title)


async def add_link(page: Any, url: str) -> None:
    await page.get_by_role("textbox", name="URL").fill(url)
    await page.get_by_role("button", name="Save").click()


async def save_link(page: Any, url: str) -> None:
    """Adds ``url`` and waits until the server has it. The row shows first (the write is queued with it),
    so the "Synced" that follows is the one after the write, not the one before the click."""
    await add_link(page, url)
    await expect(row(page, url.split("://", 1)[1])).to_have_count(1)
    await expect_status(page, "Synced")


async def axe_violations(page: Any, context: str | None = None) -> list[dict[str, Any]]:
    """axe-core's violations of impact serious or critical on the page as it is now."""
    # The app's CSP refuses inline scripts: axe is evaluated through the DevTools protocol instead.
    await page.evaluate(AXE_JS.read_text(encoding="utf-8"))
    result = await page.evaluate(
        "async (ctx) => (await axe.run(ctx ? document.querySelector(ctx) : document, {resultTypes: ['violations']})).violations",
        context,
    )
    return [v for v in result if v.get("impact") in ("serious", "critical")]


def describe(violations: list[dict[str, Any]]) -> str:
    return json.dumps(
        [{"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"][:5]]} for v in violations],
        indent=1,
    )


async def screenshot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


async def seed_session(page: Any, session: dict[str, Any]) -> None:
    """Give a fresh browser context an existing session, as if it had signed in: the refresh token goes
    where the app keeps it (IndexedDB "bookmarks", store "meta", key "session"). The page used is a
    plain file of the app, so the app itself does not start (and sign in anonymously) first."""
    await page.goto("/app/manifest.webmanifest")
    await page.evaluate(
        """(session) => new Promise((resolve, reject) => {
            const open = indexedDB.open("bookmarks", 1);
            open.onupgradeneeded = () => {
                const db = open.result;
                db.createObjectStore("bookmarks", { keyPath: "clientBookmarkId" });
                db.createObjectStore("collections", { keyPath: "id" });
                db.createObjectStore("queue", { keyPath: "seq", autoIncrement: true });
                db.createObjectStore("meta");
            };
            open.onerror = () => reject(open.error);
            open.onsuccess = () => {
                const tx = open.result.transaction("meta", "readwrite");
                tx.objectStore("meta").put({ refreshToken: session.refreshToken, user: session.user }, "session");
                tx.oncomplete = () => { open.result.close(); resolve(null); };
                tx.onerror = () => reject(tx.error);
            };
        })""",
        session,
    )


async def titles(page: Any) -> list[str]:
    """The titles of the list "Bookmarks" as shown (the virtual list renders every row of a small library)."""
    items = page.get_by_role("list", name="Bookmarks").get_by_role("listitem")
    return sorted(await items.locator("a.title").all_inner_texts())


async def pair(first: Any, second: Any) -> str:
    """Pairs ``second`` into ``first``'s library through Settings, as a person does; returns the code."""
    await first.get_by_role("button", name="Settings").click()
    settings = first.get_by_role("dialog", name="Settings")
    await settings.get_by_role("button", name="Pair a device").click()
    shown = settings.get_by_label("Your pairing code")
    await expect(shown).to_have_text(re.compile(r"^[2-9A-HJ-NP-Z]{4}-[2-9A-HJ-NP-Z]{4}$"))
    await expect(settings).to_contain_text("expires in")
    code: str = await shown.inner_text()
    await settings.get_by_role("button", name="Close").click()
    await second.get_by_role("button", name="Settings").click()
    joining = second.get_by_role("dialog", name="Settings")
    await joining.get_by_text("Join with a code").click()
    await joining.get_by_role("textbox", name="Pairing code").fill(code.lower())
    await joining.get_by_role("button", name="Join library").click()
    await expect(joining).to_have_count(0)
    return code
