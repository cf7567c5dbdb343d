"""The browser extension's Firefox build in Firefox (driver/extension.mjs): installed as a temporary add-on
over WebDriver BiDi, signed in with a pairing code on its options page, a page behind a login saved from its
popup with a copy of what Firefox shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from e2e_support import anonymous, expect, wait_enriched
from extension_support import MembersSite, random_word
from firefox_support import Firefox


async def test_the_extension_signs_in_with_a_code_and_saves_a_page_in_firefox(
    http: httpx.AsyncClient, stack: Any, firefox: Firefox, firefox_extension: Path, members_site: MembersSite
) -> None:
    device = await anonymous(http)
    await device.enable_ai()
    code = expect(await device.request("POST", "/v1/auth/pairing"), 201).json()["data"]["code"]
    secret = random_word()
    title = "Members' notes on Firefox"
    url = members_site.add_members_page(title, f"<p>Only members read that the {secret} kiln runs hot.</p>")

    result = await firefox.run(
        "extension.mjs",
        env={
            "EXTENSION_DIR": str(firefox_extension),
            "SERVER_URL": stack.gateway_url,
            "PAIRING_CODE": code,
            "LOGIN_URL": members_site.url("/login"),
            "PAGE_URL": url,
        },
    )

    await device.sync()
    saved = next((b for b in device.records.values() if b["url"] == url), None)
    assert saved is not None, "the popup's save did not reach the server"
    assert saved["userTags"] == result["tags"]
    # The copy is the page Firefox showed (logged in), not the login wall the server's own fetch would get.
    status = await wait_enriched(device, saved["clientBookmarkId"])
    assert status["result"]["title"] == title
    snapshot = expect(
        await device.request(
            "GET", "/v1/enrichment/snapshot", params={"clientBookmarkId": saved["clientBookmarkId"], "kind": "html"}
        ),
        200,
    )
    assert secret in snapshot.text and "Please sign in" not in snapshot.text
