"""Helpers of the browser extension's end-to-end tests: the extension's build, a site behind a login, a
switchable path to the server (to take the extension offline), and Chromium with the unpacked extension.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import os
import secrets
import shutil
import string
import subprocess
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from playwright.async_api import BrowserContext, Page, Worker, async_playwright
from playwright.async_api import Error as PlaywrightError
from screenshots import screenshots_dir

REPO = Path(__file__).resolve().parents[3]
EXTENSION_SRC = REPO / "clients" / "extension"
CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = screenshots_dir()


def build_extension(into: Path) -> Path:
    """``make extension``, then a copy of the Chromium build for this test run.

    The copy is given ``host_permissions`` for 127.0.0.1 (any port: the stack and the test site). A
    person grants the same access with two clicks no automation can make: "Allow" on the browser's
    permission prompt at sign-in (the server) and the toolbar button (activeTab, the page to capture).
    The extension's code still asks for the server's permission at sign-in, and the browser answers at
    once because it is already granted.
    """
    subprocess.run(["make", "--no-print-directory", "extension"], cwd=REPO, check=True)
    target = into / "chromium"
    shutil.copytree(EXTENSION_SRC / "dist" / "chromium", target)
    manifest_path = target / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["host_permissions"] = ["http://127.0.0.1/*"]
    manifest_path.write_text(json.dumps(manifest, indent=2))
    return target


def random_word(length: int = 12) -> str:
    """A word no page, dictionary or stemmer has seen: letters only, so search treats it as one word."""
    return "".join(secrets.choice(string.ascii_lowercase) for _ in range(length))


# --- a site with a login ----------------------------------------------------------------------------


@dataclass
class MembersSite:
    """Pages under /members/ are shown only to a browser holding the cookie that /login sets; anyone
    else (the server's own fetch included) gets a login wall. /public/ pages are open to all."""

    cookie_value: str = field(default_factory=lambda: secrets.token_hex(16))
    members: dict[str, tuple[str, str]] = field(default_factory=dict)
    public: dict[str, tuple[str, str]] = field(default_factory=dict)
    hits: list[tuple[str, bool]] = field(default_factory=list)
    port: int = 0
    _server: ThreadingHTTPServer | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def add_members_page(self, title: str, body: str) -> str:
        path = f"/members/{secrets.token_hex(6)}"
        self.members[path] = (title, body)
        return self.url(path)

    def add_public_page(self, title: str, body: str) -> str:
        path = f"/public/{secrets.token_hex(6)}"
        self.public[path] = (title, body)
        return self.url(path)

    def start(self) -> MembersSite:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's API
                path = self.path.split("?", 1)[0]
                logged_in = f"members={site.cookie_value}" in (self.headers.get("Cookie") or "")
                site.hits.append((path, logged_in))
                if path == "/login":
                    self.send_response(302)
                    self.send_header("Set-Cookie", f"members={site.cookie_value}; Path=/; HttpOnly")
                    self.send_header("Location", "/")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if path in site.members:
                    page = (
                        site.members[path] if logged_in else ("Please sign in", "<p>Sign in to read this article.</p>")
                    )
                elif path in site.public:
                    page = site.public[path]
                else:
                    page = ("Home", "<p>Welcome.</p>")
                self._page(*page)

            def _page(self, title: str, body: str) -> None:
                document = (
                    f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
                    f'<meta name="description" content="{html.escape(title)}"></head>'
                    f"<body><article><h1>{html.escape(title)}</h1>{body}</article></body></html>"
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(document)))
                self.end_headers()
                self.wfile.write(document)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self._server.server_address[1])
        threading.Thread(target=self._server.serve_forever, name="e2e-members-site", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


# --- the extension's path to the server ------------------------------------------------------------


class SwitchableProxy:
    """A TCP relay in front of the gateway: the extension's server URL points here, and ``offline``
    drops every open connection and refuses new ones, as a lost network would."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.offline = False
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> SwitchableProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    def set_offline(self, offline: bool) -> None:
        self.offline = offline
        if offline:
            for writer in list(self._open):
                writer.close()

    async def stop(self) -> None:
        self.set_offline(True)
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.offline:
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self._open.update((writer, up_writer))
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:
            self._open.difference_update((writer, up_writer))
            for w in (writer, up_writer):
                w.close()

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()


# --- Chromium with the extension -------------------------------------------------------------------


@dataclass
class ExtensionBrowser:
    context: BrowserContext
    worker: Worker
    extension_id: str
    windowed: bool = False

    def page_url(self, name: str, query: str = "") -> str:
        return f"chrome-extension://{self.extension_id}/{name}{query}"

    async def tab_id(self, url: str) -> int:
        tabs = await self.worker.evaluate("(url) => chrome.tabs.query({url})", url)
        assert tabs, f"no tab shows {url}"
        return int(tabs[0]["id"])

    async def badge(self, tab_id: int) -> str:
        return str(await self.worker.evaluate("(tabId) => chrome.action.getBadgeText({tabId})", tab_id))

    async def open_popup(self, tab_id: int) -> Page:
        """The popup's page for ``tab_id``, opened as a tab of its own at the popup's size (automation
        cannot click the toolbar button)."""
        popup = await self.context.new_page()
        if not self.windowed:  # with a window, this would resize the whole browser window
            await popup.set_viewport_size({"width": 360, "height": 480})
        await popup.goto(self.page_url("popup.html", f"?tab={tab_id}"))
        return popup

    async def accessibility_problems(self, page: Page) -> list[str]:
        """axe-core's violations of impact "serious" or "critical" on ``page`` (evaluated over the
        DevTools protocol, which the extension's script-src 'self' policy does not block)."""
        source = (EXTENSION_SRC / "node_modules" / "axe-core" / "axe.min.js").read_text()
        await page.evaluate(f"() => {{ {source}\n; globalThis.axe = axe; }}")
        violations = await page.evaluate("async () => (await axe.run(document)).violations")
        return [
            f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']]}"
            for v in violations
            if v["impact"] in {"serious", "critical"}
        ]

    async def storage(self, area: str) -> dict[str, Any]:
        return dict(await self.worker.evaluate(f"chrome.storage.{area}.get(null)"))


class Xvfb:
    """A virtual X display (Debian's xvfb), for a browser with its toolbar, badge and real popup."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self.display = ""

    @staticmethod
    def available() -> bool:
        return shutil.which("Xvfb") is not None

    def start(self) -> Xvfb:
        read, write = os.pipe()
        self._process = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x720x24", "-nolisten", "tcp"],
            pass_fds=(write,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(write)
        with os.fdopen(read) as announced:
            number = announced.readline().strip()  # written once the display accepts clients
        assert number, "Xvfb did not start"
        self.display = f":{number}"
        return self

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=30)

    def press(self, keys: str) -> None:
        """Presses ``keys`` (xdotool's names, e.g. "alt+shift+s") in the browser's window, as a person
        would: the browser handles them (an extension's shortcut), not the page."""
        env = {**os.environ, "DISPLAY": self.display}
        found = subprocess.run(
            ["xdotool", "search", "--onlyvisible", "--class", "chromium"], env=env, capture_output=True, text=True
        )
        windows = found.stdout.split()
        assert windows, f"no browser window on {self.display}: {found.stderr}"
        subprocess.run(["xdotool", "windowfocus", "--sync", windows[-1]], env=env, check=True)
        subprocess.run(["xdotool", "key", "--clearmodifiers", keys], env=env, check=True)

    def visible_windows(self) -> set[str]:
        """Every visible window's id: an open context menu is one of its own (an override-redirect window)."""
        env = {**os.environ, "DISPLAY": self.display}
        found = subprocess.run(
            ["xdotool", "search", "--onlyvisible", "--name", ""], env=env, capture_output=True, text=True
        )
        return set(found.stdout.split())

    def keys(self, *keys: str) -> None:
        """Key presses to whatever holds the keyboard now (an open context menu grabs it)."""
        env = {**os.environ, "DISPLAY": self.display}
        for key in keys:
            subprocess.run(["xdotool", "key", key], env=env, check=True)

    def grab(self, path: Path, box: tuple[int, int, int, int]) -> None:
        from PIL import ImageGrab

        ImageGrab.grab(xdisplay=self.display).crop(box).save(path)


@contextlib.asynccontextmanager
async def chromium_with_extension(
    extension: Path, profile: Path, *, display: str | None = None
) -> AsyncIterator[ExtensionBrowser]:
    """Chromium with the unpacked extension: in the new headless mode, or with a window on ``display``."""
    args = [
        f"--disable-extensions-except={extension}",
        f"--load-extension={extension}",
        "--no-sandbox",
        "--test-type",  # no "unsupported command-line flag" bar over the page
        "--no-first-run",
        "--no-default-browser-check",
        "--window-position=0,0",
        "--window-size=1280,720",
    ]
    env = {**os.environ, "DISPLAY": display} if display else None
    async with async_playwright() as playwright:
        context = await playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=False,  # the new headless mode runs extensions; the old one does not
            args=args if display else ["--headless=new", *args],
            env=env,
            viewport=None if display else {"width": 1280, "height": 720},
        )
        try:
            worker = context.service_workers[0] if context.service_workers else None
            if worker is None:
                worker = await context.wait_for_event("serviceworker", timeout=30_000)
            yield ExtensionBrowser(context, worker, worker.url.split("/")[2], windowed=display is not None)
        finally:
            # A windowed browser whose last tab a test closed has already quit.
            with contextlib.suppress(PlaywrightError):
                await context.close()
