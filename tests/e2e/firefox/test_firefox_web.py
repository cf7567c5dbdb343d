"""The web app's main journeys in Firefox (driver/web.mjs): a pairing code joins the browser to a library that
the test also holds through the API, so what Firefox wrote is read back from the server."""

from __future__ import annotations

from typing import Any

import httpx
from e2e_support import Device, anonymous, expect
from firefox_support import Firefox


async def library_with_code(http: httpx.AsyncClient) -> tuple[Device, str]:
    device = await anonymous(http)
    code = expect(await device.request("POST", "/v1/auth/pairing"), 201).json()["data"]["code"]
    return device, str(code)


def by_url(device: Device, url: str) -> dict[str, Any] | None:
    return next((b for b in device.records.values() if b["url"] == url), None)


async def test_add_edit_search_delete_undo_and_restore_in_firefox(
    http: httpx.AsyncClient, stack: Any, firefox: Firefox
) -> None:
    device, code = await library_with_code(http)
    result = await firefox.run("web.mjs", "library", env={"GATEWAY_URL": stack.gateway_url, "PAIRING_CODE": code})
    assert result["browser"].startswith("firefox/")
    await device.sync()
    saved = by_url(device, result["url"])
    assert saved is not None, f"the bookmark made in Firefox is not on the server: {list(device.records.values())}"
    assert saved["normalizedUrl"] == "https://firefox.example/articles/ownership"
    assert saved["title"] == result["title"]
    assert saved["notes"] == "Borrowing with diagrams"
    assert saved["userTags"] == ["rust", "learning"]
    assert saved["clientBookmarkId"] not in device.deleted


async def test_offline_writes_reach_the_server_on_reconnect_in_firefox(
    http: httpx.AsyncClient, stack: Any, firefox: Firefox
) -> None:
    device, code = await library_with_code(http)
    result = await firefox.run("web.mjs", "offline", env={"GATEWAY_URL": stack.gateway_url, "PAIRING_CODE": code})
    await device.sync()
    first = by_url(device, result["first"])
    assert first is not None and first["title"] == result["renamed"]
    assert by_url(device, result["second"]) is not None, "the bookmark added offline did not reach the server"
