"""Scenario (c): enrichment end to end against a local web site, and the cache shared across users.

A user with two devices enables ``useAi``, saves a page and queues it (202); the worker fetches the page
from 127.0.0.1, the status turns ``completed``, the bookmark carries the server-side fields in delta,
and the other device, which only syncs when nudged, receives them. A second user queueing the same URL
(spelled with tracking parameters and ``www.``-less host variations normalised away) gets the cached
result at once (200 ``cacheHit``). A separate scenario needs the headless browser.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import pytest
from e2e_support import (
    LocalSite,
    anonymous,
    expect,
    nudge_socket,
    sign_in,
    sync_on_nudges,
    wait_enriched,
    wait_for,
)

from devstack.testing import LocalJwksServer

PAGE_TITLE = "Baking sourdough bread at home"


def assert_enriched_bookmark(record: dict[str, Any], *, url: str) -> None:
    assert record["url"] == url
    assert record["enrichmentStatus"] == "completed"
    assert record["title"] == PAGE_TITLE, "enrichment overwrites the client's title with the page's"
    assert record["description"]
    # The page's picture as the platform re-encoded it, on the platform's own origin.
    assert re.fullmatch(r"/v1/previews/images/[0-9a-f]{64}\.webp", record["thumbnailUrl"] or ""), record["thumbnailUrl"]
    assert record["summary"] and len(record["summary"]) > 20
    assert 1 <= len(record["tags"]) <= 8
    assert all(tag == tag.lower() for tag in record["tags"]) and len(set(record["tags"])) == len(record["tags"])
    assert record["enrichedAt"] is not None
    assert record["saveWhy"] is None, "saveWhy is Pro-gated: null for a free user"
    assert record["snapshotStatus"] in {"ready", "completed"}
    assert record["lastErrorCode"] is None


async def test_enrichment_end_to_end_with_nudge_and_cross_user_cache(
    http: httpx.AsyncClient, idp_a: LocalJwksServer, site: LocalSite, stack: Any
) -> None:
    url = site.add_article(PAGE_TITLE)
    sub = f"reader-{uuid.uuid4().hex}"
    d1 = await sign_in(http, idp_a, sub)
    d2 = await sign_in(http, idp_a, sub)
    await d1.enable_ai()
    await d2.sync()

    async with nudge_socket(stack.gateway_url, d2.token) as socket:
        saved = await d1.put("enrich-me", {"url": url, "title": "my own title"})
        assert saved["title"] == "my own title" and saved["enrichmentStatus"] == "pending"
        await sync_on_nudges(d2, socket, until=_has(d2, "enrich-me"))

        accepted = expect(await d1.enqueue("enrich-me", url), 202)
        assert accepted.json() == {"accepted": True, "status": "pending"}

        status = await wait_enriched(d1, "enrich-me")
        assert status["clientBookmarkId"] == "enrich-me" and status["errorCode"] is None
        result = status["result"]
        assert result["normalizedUrl"] == url and result["domain"] == "127.0.0.1"
        assert result["title"] == PAGE_TITLE
        assert result["summary"] and result["tags"]
        assert result["saveWhy"] is None
        assert site.hits.get(url.removeprefix(site.url("")), 0) >= 1, "the worker never fetched the page"

        # The other device learns about it from a nudge and gets the fields through delta.
        await sync_on_nudges(d2, socket, until=_enriched(d2, "enrich-me"))
    assert_enriched_bookmark(d2.records["enrich-me"], url=url)
    assert d2.records["enrich-me"]["summary"] == result["summary"]
    assert d2.records["enrich-me"]["tags"] == result["tags"]

    # Another user queueing the same page (different spelling, same normalized URL) hits the cache.
    other = await anonymous(http)
    await other.enable_ai()
    spelled = url + "?utm_source=feed&utm_medium=rss#comments"
    await other.put("same-page", {"url": spelled})
    hit = expect(await other.enqueue("same-page", spelled), 200)
    assert hit.json() == {"cacheHit": True, "status": "completed"}
    other_status = expect(await other.status("same-page"), 200).json()["data"]
    assert other_status["status"] == "completed" and other_status["result"]["title"] == PAGE_TITLE
    assert other_status["result"]["summary"] == result["summary"]

    async def other_enriched() -> bool:
        await other.sync()
        record = other.records.get("same-page")
        return record is not None and record["enrichedAt"] is not None

    await wait_for(other_enriched, what="cached result applied to the second user's bookmark")
    assert_enriched_bookmark(other.records["same-page"], url=spelled)


def _has(device: Any, bookmark_id: str) -> Any:
    async def check() -> bool:
        return bookmark_id in device.records

    return check


def _enriched(device: Any, bookmark_id: str) -> Any:
    async def check() -> bool:
        record = device.records.get(bookmark_id)
        return record is not None and record["enrichedAt"] is not None

    return check


def _chromium() -> str | None:
    # The worker's own lookup (ENRICHMENT_CHROMIUM_PATH, Debian's paths, PATH): the same answer it got.
    from enrichment.pipeline.browser import find_chromium

    return find_chromium()


@pytest.mark.browser
async def test_browser_snapshot_of_a_scripted_page(http: httpx.AsyncClient, site: LocalSite) -> None:
    if _chromium() is None:
        pytest.skip("no Chromium on this machine: the worker runs without a browser (ENRICHMENT_BROWSER=auto)")
    marker = f"rendered-by-script-{uuid.uuid4().hex}"
    script = f"<script>document.body.insertAdjacentHTML('beforeend', '<p id=\"marker\">{marker}</p>')</script>"
    url = site.add_article("A page that finishes rendering in the browser", extra_body=script)

    user = await anonymous(http)
    await user.enable_ai()
    await user.put("rendered", {"url": url})
    expect(await user.enqueue("rendered", url), 202)
    status = await wait_enriched(user, "rendered")
    assert status["result"]["snapshotStatus"] == "completed", "with a browser the snapshot is a rendered capture"

    html = expect(
        await user.request("GET", "/v1/enrichment/snapshot", params={"clientBookmarkId": "rendered", "kind": "html"}),
        200,
    )
    assert marker in html.text, "the stored HTML must be the page as rendered (script executed)"
    png = expect(
        await user.request(
            "GET", "/v1/enrichment/snapshot", params={"clientBookmarkId": "rendered", "kind": "screenshot"}
        ),
        200,
    )
    assert png.headers["content-type"].startswith("image/png") and png.content.startswith(b"\x89PNG\r\n\x1a\n")
