"""BrowserRenderer with a real headless Chromium against pages served on 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import signal
import struct
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psutil
import pytest

from enrichment.fetch import FetchError, SafeFetcher
from enrichment.pipeline import BrowserRenderer, OfflineAnalyzer, RenderError, find_chromium
from enrichment.service import ClaimedJob
from enrichment.worker.attempt import Enricher

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        find_chromium() is None,
        reason="no Chromium found (install Debian's chromium or set ENRICHMENT_CHROMIUM_PATH)",
    ),
]

# A 1×1 transparent PNG.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)

PAGES: dict[str, str] = {
    "/js-title": """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
        <h1 id="headline">static</h1>
        <script>
          document.title = "Rendered by JavaScript";
          const p = document.createElement("p");
          p.id = "inserted";
          p.textContent = "Inserted by script";
          document.body.appendChild(p);
          document.getElementById("headline").textContent = "Headline from script";
        </script></body></html>""",
    "/subrequests": """<!DOCTYPE html><html><head><title>Sub-requests</title></head><body>
        <img src="/pixel.png">
        <img src="http://10.255.255.1/x.png">
        <img src="http://169.254.169.254/latest/meta-data/">
        <img src="/redirect-to-metadata">
        <iframe src="/redirect-to-private"></iframe>
        <p>Page with blocked resources.</p></body></html>""",
    "/tall": """<!DOCTYPE html><html><head><title>Tall</title></head><body style="margin:0">
        <div style="height:20000px;background:linear-gradient(#fff,#000)">tall</div></body></html>""",
    "/hold": "<!DOCTYPE html><html><head><title>Held</title></head><body>held</body></html>",
    # Navigations the filter blocks after the page loaded: Chromium then shows its own error page.
    "/script-to-metadata": """<!DOCTYPE html><html><head><title>Script away</title></head><body>
        <p>"""
    + "A readable paragraph that the fetched capture keeps. " * 8
    + """</p>
        <script>location.href = "http://169.254.169.254/latest/meta-data/";</script></body></html>""",
    "/later-to-private": """<!DOCTYPE html><html><head><title>Later away</title></head><body>
        <script>addEventListener("load", () => setTimeout(() => { location.href = "https://10.255.255.1/"; }, 0));
        </script></body></html>""",
    "/refresh-to-private": """<!DOCTYPE html><html><head><title>Refresh away</title>
        <meta http-equiv="refresh" content="0;url=http://10.255.255.1/admin"></head><body>x</body></html>""",
    "/script-to-redirect": """<!DOCTYPE html><html><head><title>Via redirect</title></head><body>
        <script>location.href = "/redirect-to-metadata";</script></body></html>""",
}


@dataclass
class Site:
    origin: str = ""
    hits: list[str] = field(default_factory=list)
    held: int = 0
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    state = Site()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            state.hits.append(self.path)
            if self.path == "/pixel.png":
                self._send(200, "image/png", PIXEL)
            elif self.path == "/redirect-to-metadata":
                self._redirect("http://169.254.169.254/latest/meta-data/iam/")
            elif self.path == "/redirect-to-private":
                self._redirect("http://10.255.255.1/admin")
            elif self.path == "/go-elsewhere":
                self._redirect("/js-title")
            elif self.path == "/hold":
                with state.lock:
                    state.held += 1
                state.release.wait(30)
                self._send(200, "text/html", PAGES["/hold"].encode())
            elif self.path in PAGES:
                self._send(200, "text/html; charset=utf-8", PAGES[self.path].encode())
            else:
                self._send(404, "text/html", b"<html><body>not found</body></html>")

        def _send(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _redirect(self, location: str) -> None:
            self.send_response(302)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state.origin = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    state.release.set()
    server.shutdown()
    server.server_close()


def _origin_only(origin: str):  # type: ignore[no-untyped-def]
    """A checker that, like production, refuses everything except the test server's origin."""

    async def checker(url: str) -> None:
        if url != origin and not url.startswith(origin + "/"):
            raise FetchError("blocked-host", f"{url} is outside the test origin")

    return checker


async def _renderer(site: Site, **options: object) -> BrowserRenderer:
    renderer = await BrowserRenderer.create(
        mode="required",
        allow_private_networks=True,
        url_checker=_origin_only(site.origin),
        **options,  # type: ignore[arg-type]
    )
    assert renderer is not None
    return renderer


@pytest.fixture(scope="module")
async def renderer(site: Site) -> AsyncIterator[BrowserRenderer]:
    renderer = await _renderer(site)
    yield renderer
    await renderer.close()


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def _chromium_descendants() -> dict[int, psutil.Process]:
    """Live Chromium processes started (through the Playwright driver) by this test process."""
    processes = {}
    for child in psutil.Process().children(recursive=True):
        try:
            if "chrom" in child.name().lower() and child.status() != psutil.STATUS_ZOMBIE:
                processes[child.pid] = child
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return processes


def _is_browser_process(process: psutil.Process) -> bool:
    """The browser's main process: the one the driver started, not a renderer, zygote or helper."""
    try:
        parent = process.parent()
        return _running(process) and parent is not None and "chrom" not in parent.name().lower()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_javascript_title_and_content(renderer: BrowserRenderer, site: Site) -> None:
    page = await renderer.render(site.origin + "/js-title")
    assert page.title == "Rendered by JavaScript"
    assert "Inserted by script" in page.html
    assert "Headline from script" in page.html
    assert page.final_url == site.origin + "/js-title"
    width, height = _png_size(page.screenshot_png)
    assert width == 1280
    assert height >= 1


async def test_final_url_follows_redirects(renderer: BrowserRenderer, site: Site) -> None:
    page = await renderer.render(site.origin + "/go-elsewhere")
    assert page.final_url == site.origin + "/js-title"
    assert page.title == "Rendered by JavaScript"


async def test_blocked_sub_requests_and_redirect_hops_are_aborted(renderer: BrowserRenderer, site: Site) -> None:
    before = renderer.blocked_count
    site.hits.clear()
    page = await renderer.render(site.origin + "/subrequests")
    assert page.title == "Sub-requests"
    assert "/pixel.png" in site.hits  # allowed sub-requests still load
    blocked = list(renderer.blocked_requests)
    # Requests the page starts are stopped by the route filter ...
    assert "http://10.255.255.1/x.png" in blocked
    assert "http://169.254.169.254/latest/meta-data/" in blocked
    # ... and redirect hops, which routing never sees, by the proxy.
    assert "/redirect-to-metadata" in site.hits
    assert "http://169.254.169.254/latest/meta-data/iam/" in blocked
    assert "/redirect-to-private" in site.hits
    assert "http://10.255.255.1/admin" in blocked
    assert renderer.blocked_count >= before + 4


@pytest.mark.parametrize(
    "path", ["/script-to-metadata", "/later-to-private", "/refresh-to-private", "/script-to-redirect"]
)
async def test_a_blocked_navigation_is_a_render_error_not_chromiums_error_page(
    renderer: BrowserRenderer, site: Site, path: str
) -> None:
    before = renderer.blocked_count
    with pytest.raises(RenderError, match="navigated away"):
        await renderer.render(site.origin + path)
    assert renderer.blocked_count > before


async def test_a_blocked_navigation_stores_only_the_fetched_capture(renderer: BrowserRenderer, site: Site) -> None:
    url = site.origin + "/script-to-metadata"
    async with SafeFetcher(timeout_seconds=10, user_agent="test/1.0", allow_private_networks=True) as fetcher:
        enricher = Enricher(fetcher=fetcher, analyzer=OfflineAnalyzer(), renderer=renderer)
        outcome = await enricher.enrich(
            ClaimedJob(id=uuid.uuid4(), url=url, normalized_url=url, attempts=1, existing_tags=[])
        )
    assert outcome.result.snapshotStatus == "ready"
    kinds = {snapshot.kind: snapshot for snapshot in outcome.snapshots}
    assert set(kinds) == {"html", "readable_text"}
    assert b"chrome-error" not in kinds["html"].data and b"readable paragraph" in kinds["html"].data
    assert outcome.result.title == "Script away"


async def test_screenshot_height_is_capped(renderer: BrowserRenderer, site: Site) -> None:
    page = await renderer.render(site.origin + "/tall")
    width, height = _png_size(page.screenshot_png)
    assert width == 1280
    assert 10_000 >= height > 800  # full page beyond the viewport, but capped


async def test_error_status_is_a_render_error(renderer: BrowserRenderer, site: Site) -> None:
    with pytest.raises(RenderError, match="HTTP 404"):
        await renderer.render(site.origin + "/missing")


async def test_main_url_outside_the_policy_is_refused(renderer: BrowserRenderer) -> None:
    with pytest.raises(FetchError) as caught:
        await renderer.render("http://169.254.169.254/")
    assert caught.value.code == "blocked-host"


async def test_default_policy_blocks_loopback_pages(site: Site) -> None:
    renderer = await BrowserRenderer.create(mode="required", allow_private_networks=False)
    assert renderer is not None
    try:
        with pytest.raises(FetchError) as caught:
            await renderer.render(site.origin + "/js-title")
        assert caught.value.code == "blocked-host"
    finally:
        await renderer.close()


async def test_private_networks_allowed_without_a_custom_checker(site: Site) -> None:
    # ENRICHMENT_ALLOW_PRIVATE_NETWORKS=true (local stacks and end-to-end tests) renders loopback pages.
    renderer = await BrowserRenderer.create(mode="auto", allow_private_networks=True)
    assert renderer is not None
    try:
        page = await renderer.render(site.origin + "/js-title")
        assert page.title == "Rendered by JavaScript"
    finally:
        await renderer.close()


async def test_concurrency_is_bounded(site: Site) -> None:
    renderer = await _renderer(site, max_concurrency=2)
    entered = 0
    original = renderer._render

    async def counting(browser, url):  # type: ignore[no-untyped-def]
        nonlocal entered
        entered += 1
        return await original(browser, url)

    renderer._render = counting  # type: ignore[method-assign]
    site.release.clear()
    site.held = 0
    try:
        renders = [asyncio.create_task(renderer.render(site.origin + "/hold")) for _ in range(3)]
        while site.held < 2:
            await asyncio.sleep(0.05)
        assert entered == 2
        assert renderer._semaphore.locked()
        site.release.set()
        pages = await asyncio.gather(*renders)
        assert [page.title for page in pages] == ["Held"] * 3
        assert entered == 3
    finally:
        site.release.set()
        await renderer.close()


async def test_browser_is_restarted_after_a_crash(site: Site) -> None:
    others = _chromium_descendants()  # e.g. the module's shared renderer: not ours to kill
    renderer = await _renderer(site)
    try:
        await renderer.render(site.origin + "/js-title")
        ours = [process for pid, process in _chromium_descendants().items() if pid not in others]
        browsers = [process for process in ours if _is_browser_process(process)]
        assert len(browsers) == 1
        for process in browsers:
            os.kill(process.pid, signal.SIGKILL)
        for process in browsers:
            process.wait(timeout=30)
        page = await renderer.render(site.origin + "/js-title")
        assert page.title == "Rendered by JavaScript"
    finally:
        await renderer.close()


async def test_close_leaves_no_chromium_processes(site: Site) -> None:
    others = _chromium_descendants()
    renderer = await _renderer(site)
    await renderer.render(site.origin + "/js-title")
    ours = {pid: process for pid, process in _chromium_descendants().items() if pid not in others}
    assert ours, "expected Chromium processes while the renderer is open"
    await renderer.close()
    assert [pid for pid, process in ours.items() if _running(process)] == []
    assert set(_chromium_descendants()) <= set(others)
    with pytest.raises(RuntimeError, match="closed"):
        await renderer.render(site.origin + "/js-title")
