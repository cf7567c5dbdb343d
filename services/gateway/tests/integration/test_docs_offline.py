"""``/docs`` renders the interactive API reference in a real browser with no request leaving the gateway.

Headless Chromium (Debian's, at /usr/bin/chromium) loads the page with every request to anywhere but
the gateway aborted: Swagger UI must still render the operations of the combined OpenAPI document.
"""

from __future__ import annotations

import asyncio
import shutil
from typing import Any

import pytest

from gateway.docs import CONTENT_SECURITY_POLICY

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = pytest.mark.timeout(180)

OK = {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}}
SPEC = {
    "openapi": "3.1.0",
    "info": {"title": "stand-in", "version": "1"},
    "paths": {
        "/v1/bookmarks/{clientBookmarkId}": {
            "get": {"operationId": "get_bookmark", "summary": "Read one bookmark", "responses": OK},
            "put": {"operationId": "put_bookmark", "summary": "Save one bookmark", "responses": OK},
        },
        "/v1/bookmarks/delta": {"get": {"operationId": "delta", "summary": "Changes since a cursor", "responses": OK}},
    },
}


async def test_docs_render_operations_with_every_outside_request_aborted(start_gateway: Any, stand_in: Any) -> None:
    from playwright.async_api import Route, async_playwright

    stand_in.openapi = SPEC
    async with start_gateway() as gw:
        async with asyncio.timeout(30):
            while not (await gw.client.get("/v1/openapi.json")).json()["paths"]:
                await asyncio.sleep(0.05)
        served: list[str] = []
        aborted: list[str] = []
        violations: list[str] = []

        async def only_the_gateway(route: Route) -> None:
            url = route.request.url
            if url.startswith(gw.url + "/") or url.startswith("data:"):
                served.append(url)
                await route.continue_()
            else:
                aborted.append(url)
                await route.abort()

        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
            try:
                page = await browser.new_page()
                page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
                await page.route("**/*", only_the_gateway)
                response = await page.goto(gw.url + "/docs")
                assert response is not None and response.status == 200
                await page.wait_for_selector(".opblock-summary-path", timeout=30_000)
                paths = await page.locator(".opblock-summary-path").all_inner_texts()
                summaries = await page.locator(".opblock-summary-description").all_inner_texts()
            finally:
                await browser.close()

    assert {p.replace("\u200b", "") for p in paths} == {"/v1/bookmarks/{clientBookmarkId}", "/v1/bookmarks/delta"}
    assert "Save one bookmark" in summaries
    assert not aborted, f"the docs page asked for outside resources: {aborted}"
    assert any(url.endswith("/docs/assets/swagger-ui-bundle.js") for url in served)
    assert not violations, violations


async def test_docs_and_assets_carry_a_self_only_policy(gateway: Any) -> None:
    page = await gateway.client.get("/docs")
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY and "http" not in CONTENT_SECURITY_POLICY
    assert "<script>" not in page.text  # no inline script: script-src allows only the gateway's files
    for name, media in (
        ("swagger-ui-bundle.js", "text/javascript"),
        ("swagger-ui.css", "text/css"),
        ("init.js", "text/javascript"),
    ):
        asset = await gateway.client.get(f"/docs/assets/{name}")
        assert asset.status_code == 200 and asset.headers["content-type"].startswith(media), name
        again = await gateway.client.get(f"/docs/assets/{name}", headers={"If-None-Match": asset.headers["etag"]})
        assert again.status_code == 304, name


@pytest.mark.parametrize("name", ["missing.js", "..%2F..%2Fdocs.py", "core.py", "%2e%2e"])
async def test_anything_else_under_the_assets_path_is_a_json_404(gateway: Any, name: str) -> None:
    response = await gateway.client.get(f"/docs/assets/{name}")
    assert response.status_code == 404
    assert response.json() == {"code": "not-found", "message": "Not found."}
