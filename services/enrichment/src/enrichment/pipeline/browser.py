"""Rendered snapshots through a headless Chromium (README, Configuration ENRICHMENT_BROWSER, §6.7).

Debian's Chromium is driven by Python Playwright through ``executable_path``; Playwright's own browser
downloads are never used. One browser per renderer (the worker keeps one renderer per process), a fresh
context per render so no cookies or storage leak between users' pages, and a semaphore bounding how many
pages render at once.

SSRF defence has two layers. ``context.route`` checks every request a page starts (and its scheme) and
aborts blocked ones early, recording them in :attr:`BrowserRenderer.blocked_requests`. Routing cannot see
redirect hops, and the browser would resolve names again after that check, so all browser traffic also
goes through :class:`~enrichment.pipeline.proxy.FilteringProxy`, which checks and pins every connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import shutil
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Final, Literal

from playwright.async_api import (
    Browser,
    BrowserContext,
    Frame,
    Page,
    Playwright,
    Request,
    Route,
    WebSocketRoute,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from enrichment.fetch import FetchError, check_url_allowed
from enrichment.pipeline.proxy import FilteringProxy, UrlChecker
from enrichment.pipeline.types import RenderedPage

__all__ = ["CHROMIUM_ARGS", "BrowserRenderer", "RenderError", "UrlChecker", "find_chromium"]

logger = logging.getLogger(__name__)

CHROMIUM_ARGS: Final = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",  # QUIC is UDP and would not go through the filtering proxy
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    # WebRTC can send UDP to any address a page names; only proxied (i.e. none) is allowed.
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--dns-prefetch-disable",
)
CHROMIUM_CANDIDATES: Final = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
VIEWPORT: Final = {"width": 1280, "height": 800}
MAX_SCREENSHOT_HEIGHT: Final = 10_000
"""Full-page screenshots stop here: a 1280×10000 PNG already takes ~50 MB to composite."""
NETWORK_IDLE_WAIT_SECONDS: Final = 3.0
BLOCKED_REQUESTS_KEPT: Final = 1000
# Long-lived or bulky resources a still snapshot does not need.
_SKIPPED_RESOURCE_TYPES: Final = frozenset({"media", "eventsource", "websocket", "manifest"})
_PAGE_HEIGHT_JS: Final = (
    "() => Math.max(document.documentElement ? document.documentElement.scrollHeight : 0,"
    " document.body ? document.body.scrollHeight : 0)"
)


class RenderError(Exception):
    """The page could not be rendered (navigation failure, HTTP error status, timeout, browser crash)."""


def find_chromium(executable_path: str | None = None) -> str | None:
    """The Chromium to drive: the given path, ``ENRICHMENT_CHROMIUM_PATH``, Debian's paths, then PATH."""
    configured = executable_path or os.environ.get("ENRICHMENT_CHROMIUM_PATH", "").strip() or None
    if configured is not None:
        return configured if _is_executable(configured) else None
    for candidate in CHROMIUM_CANDIDATES:
        if _is_executable(candidate):
            return candidate
    return shutil.which("chromium")


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


class BrowserRenderer:
    """Renders pages in a shared headless Chromium: rendered HTML, full-page PNG, title, final URL."""

    def __init__(
        self,
        *,
        executable_path: str,
        allow_private_networks: bool,
        timeout_seconds: float = 20,
        max_concurrency: int = 2,
        url_checker: UrlChecker | None = None,
    ) -> None:
        self._executable_path = executable_path
        self._timeout_seconds = timeout_seconds
        self._semaphore = asyncio.Semaphore(max(1, max_concurrency))
        self._launch_lock = asyncio.Lock()
        self._url_checker: UrlChecker = url_checker or functools.partial(
            check_url_allowed, allow_private_networks=allow_private_networks
        )
        # An injected checker (tests, stricter policies) applies at the proxy too; the default one is
        # redundant there, because the proxy resolves and checks every address itself.
        self._proxy = FilteringProxy(
            allow_private_networks=allow_private_networks,
            connect_timeout_seconds=timeout_seconds,
            on_blocked=self._record_blocked,
            url_checker=url_checker,
        )
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._user_agent: str | None = None
        self._closed = False
        self.blocked_requests: deque[str] = deque(maxlen=BLOCKED_REQUESTS_KEPT)
        """Most recent URLs the browser was not allowed to load (observability and tests)."""
        self.blocked_count = 0

    @classmethod
    async def create(
        cls,
        *,
        mode: Literal["auto", "off", "required"],
        allow_private_networks: bool,
        timeout_seconds: float = 20,
        max_concurrency: int = 2,
        executable_path: str | None = None,
        url_checker: UrlChecker | None = None,
    ) -> BrowserRenderer | None:
        """A started renderer, or None when ``mode`` is off, or auto and no working Chromium exists.

        ``required`` raises RuntimeError instead of returning None, so start-up fails loudly.
        """
        if mode == "off":
            return None
        if mode not in ("auto", "required"):
            raise ValueError(f"ENRICHMENT_BROWSER must be auto, off or required, not {mode!r}")
        path = find_chromium(executable_path)
        if path is None:
            if mode == "required":
                raise RuntimeError(
                    "ENRICHMENT_BROWSER=required but no Chromium was found "
                    "(install chromium or set ENRICHMENT_CHROMIUM_PATH)"
                )
            logger.info("no Chromium found; snapshots will use the fetched HTML only")
            return None
        renderer = cls(
            executable_path=path,
            allow_private_networks=allow_private_networks,
            timeout_seconds=timeout_seconds,
            max_concurrency=max_concurrency,
            url_checker=url_checker,
        )
        try:
            await renderer._start()
        except Exception as exc:
            await renderer.close()
            if mode == "required":
                raise RuntimeError(f"ENRICHMENT_BROWSER=required but Chromium at {path} did not start: {exc}") from exc
            logger.warning(
                "Chromium at %s did not start; snapshots will use the fetched HTML only", path, exc_info=True
            )
            return None
        return renderer

    async def render(self, url: str) -> RenderedPage:
        """Load ``url`` and capture it. Raises FetchError for a blocked URL, RenderError for the rest."""
        if self._closed:
            raise RuntimeError("renderer is closed")
        await self._url_checker(url)  # FetchError: same codes as the plain fetch (blocked-host, …)
        return await self._with_browser(lambda browser: self._render(browser, url))

    async def render_html(self, html: str, *, url: str) -> RenderedPage:
        """Capture ``html`` (a page a user's browser sent) as it lays out with no script and no network:
        scripts are off and every request it would make, of any scheme, is refused. ``url`` is only the
        page's label (``final_url``); nothing is loaded from it. Raises RenderError."""
        if self._closed:
            raise RuntimeError("renderer is closed")
        return await self._with_browser(lambda browser: self._render_offline(browser, html, url))

    async def _with_browser(self, action: Callable[[Browser], Awaitable[RenderedPage]]) -> RenderedPage:
        async with self._semaphore:
            for attempt in range(2):
                browser = await self._ensure_browser()
                try:
                    async with asyncio.timeout(self._timeout_seconds):
                        return await action(browser)
                except TimeoutError:
                    raise RenderError(f"rendering took longer than {self._timeout_seconds:g}s") from None
                except PlaywrightError as exc:
                    if attempt == 0 and not browser.is_connected():
                        # Chromium died under this render (crash, OOM kill): one retry in a fresh browser.
                        logger.warning("Chromium went away during a render; restarting it and retrying once")
                        continue
                    raise RenderError(_first_line(exc)) from None
            raise RenderError("Chromium went away twice during one render")

    async def close(self) -> None:
        """Close the browser, the Playwright driver and the proxy; no Chromium process outlives this."""
        self._closed = True
        async with self._launch_lock:
            await self._shutdown_browser()
        await self._proxy.close()

    # --- lifecycle -------------------------------------------------------------------------------------

    async def _start(self) -> None:
        await self._proxy.start()
        async with self._launch_lock:
            await self._launch()

    async def _ensure_browser(self) -> Browser:
        async with self._launch_lock:
            if self._closed:
                raise RuntimeError("renderer is closed")
            if self._browser is None or not self._browser.is_connected():
                # Chromium crashed, was killed, or the driver died: start over with a fresh one.
                logger.warning("Chromium is not connected; restarting it")
                await self._shutdown_browser()
                await self._launch()
            assert self._browser is not None
            return self._browser

    async def _launch(self) -> None:
        self._playwright = await async_playwright().start()
        self._browser = await self._playwright.chromium.launch(
            executable_path=self._executable_path,
            headless=True,
            args=[
                *CHROMIUM_ARGS,
                f"--proxy-server={self._proxy.url}",
                # Without this Chromium sends loopback traffic around the proxy.
                "--proxy-bypass-list=<-loopback>",
            ],
            timeout=self._timeout_seconds * 1000,
        )
        major = self._browser.version.split(".", 1)[0]
        # The headless default says "HeadlessChrome", which many sites answer with a bot wall.
        self._user_agent = (
            f"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{major}.0.0.0 Safari/537.36"
        )

    async def _shutdown_browser(self) -> None:
        browser, self._browser = self._browser, None
        playwright, self._playwright = self._playwright, None
        if browser is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(10):
                    await browser.close()
        if playwright is not None:
            # Stopping the driver also kills any browser it launched that did not close in time.
            with contextlib.suppress(Exception):
                await playwright.stop()

    # --- rendering -------------------------------------------------------------------------------------

    async def _render(self, browser: Browser, url: str) -> RenderedPage:
        context = await browser.new_context(
            viewport={"width": VIEWPORT["width"], "height": VIEWPORT["height"]},
            user_agent=self._user_agent,
            accept_downloads=False,
            service_workers="block",  # a service worker's requests bypass routing
        )
        try:
            return await self._capture(context, url)
        finally:
            with contextlib.suppress(Exception):
                await context.close()

    async def _render_offline(self, browser: Browser, html: str, url: str) -> RenderedPage:
        context = await browser.new_context(
            viewport={"width": VIEWPORT["width"], "height": VIEWPORT["height"]},
            java_script_enabled=False,
            offline=True,
            accept_downloads=False,
            service_workers="block",
        )
        try:
            context.set_default_timeout(self._timeout_seconds * 1000)
            await context.route("**/*", self._refuse)
            await context.route_web_socket("**/*", _refuse_web_socket)
            page = await context.new_page()
            await page.set_content(html, wait_until="load")
            title = (await page.title()).strip() or None
            screenshot = await _full_page_screenshot(page)
            return RenderedPage(html=html, screenshot_png=screenshot, title=title, final_url=url)
        finally:
            with contextlib.suppress(Exception):
                await context.close()

    async def _refuse(self, route: Route, request: Request) -> None:
        self._record_blocked(request.url)
        with contextlib.suppress(PlaywrightError):
            await route.abort("blockedbyclient")

    async def _capture(self, context: BrowserContext, url: str) -> RenderedPage:
        timeout_ms = self._timeout_seconds * 1000
        context.set_default_timeout(timeout_ms)
        context.set_default_navigation_timeout(timeout_ms)
        await context.route("**/*", self._filter)
        await context.route_web_socket("**/*", _refuse_web_socket)
        page = await context.new_page()
        main_frame_urls: list[str] = []
        page.on("framenavigated", lambda frame: _note_main_frame(page, frame, main_frame_urls))
        response = await page.goto(url, wait_until="load")
        if response is not None and response.status >= 400:
            raise RenderError(f"the page answered HTTP {response.status}")
        with contextlib.suppress(PlaywrightTimeoutError):
            await page.wait_for_load_state("networkidle", timeout=NETWORK_IDLE_WAIT_SECONDS * 1000)
        title = (await page.title()).strip() or None
        screenshot = await _full_page_screenshot(page)
        html = await page.content()
        _refuse_error_pages([*main_frame_urls, page.url])
        return RenderedPage(html=html, screenshot_png=screenshot, title=title, final_url=page.url)

    async def _filter(self, route: Route, request: Request) -> None:
        url = request.url
        scheme = url.split(":", 1)[0].lower()
        try:
            if scheme in ("data", "blob"):
                await route.continue_()
            elif scheme not in ("http", "https"):
                self._record_blocked(url)
                await route.abort("blockedbyclient")
            elif request.resource_type in _SKIPPED_RESOURCE_TYPES:
                await route.abort("blockedbyclient")
            elif not await self._allowed(url):
                self._record_blocked(url)
                await route.abort("blockedbyclient")
            else:
                await route.continue_()
        except PlaywrightError:
            # The page or context closed while this request waited; nothing is left to answer.
            logger.debug("route for %s ended with its page", url)

    async def _allowed(self, url: str) -> bool:
        try:
            await self._url_checker(url)
        except FetchError:
            return False
        except Exception:  # fail closed: a checker that breaks blocks
            logger.warning("URL check failed; blocking the request", exc_info=True)
            return False
        return True

    def _record_blocked(self, url: str) -> None:
        self.blocked_count += 1
        self.blocked_requests.append(url)
        logger.debug("browser request blocked: %s", url)


async def _full_page_screenshot(page: Page) -> bytes:
    height = await page.evaluate(_PAGE_HEIGHT_JS)
    clip_height = max(1, min(int(height or 0), MAX_SCREENSHOT_HEIGHT))
    return await page.screenshot(
        type="png",
        full_page=True,
        clip={"x": 0, "y": 0, "width": VIEWPORT["width"], "height": clip_height},
        animations="disabled",
        caret="hide",
    )


def _note_main_frame(page: Page, frame: Frame, urls: list[str]) -> None:
    if frame == page.main_frame:
        urls.append(frame.url)


def _refuse_error_pages(urls: list[str]) -> None:
    """A blocked navigation (script, meta refresh, redirect after load) shows Chromium's own error page
    (``chrome-error://chromewebdata/``): that is not the page, so nothing rendered may be kept."""
    for url in urls:
        if url.split(":", 1)[0].lower() not in ("http", "https"):
            raise RenderError(f"the page navigated away to {url[:100]!r} (a blocked or failed navigation)")


async def _refuse_web_socket(route: WebSocketRoute) -> None:
    # Live connections add nothing to a still snapshot and keep the page from ever going network-idle.
    with contextlib.suppress(PlaywrightError):
        await route.close(code=1008, reason="blocked")


def _first_line(exc: Exception) -> str:
    message = str(exc).strip().splitlines()
    return message[0] if message else type(exc).__name__
