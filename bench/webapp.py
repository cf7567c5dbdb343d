"""Web app benchmark: what a person waits for, with a library of 10,000 bookmarks.

    .venv/bin/python bench/webapp.py [--bookmarks 10000] [--url http://127.0.0.1:8080]

Without ``--url`` it starts its own stack (private data dir, free ports) serving ``web/dist`` (run
``make web`` first). One anonymous user gets ``--bookmarks`` bookmarks through the API (PUTs, 16 at a
time), then a headless Chromium (/usr/bin/chromium) opens the app as that user:

  first load   gzip -9 bytes of the shell, scripts and styles (what a first visit downloads)
  cold open    navigation → first rows shown, and → the full initial sync done (every delta page stored
               in IndexedDB, status "Synced")
  warm open    a reload: navigation → first rows from IndexedDB
  keystroke    a character typed in the search box → the list updated (local results, then the
               server's results), median and max of 10 queries
  scrolling    the whole list scrolled top to bottom one screen per frame: frames over 50 ms, p95 and
               max frame time
  paste        a link to a page of a local site typed and saved → its row shows the page's title and
               its picture (GET /v1/previews, a miss: the page and picture fetched, re-encoded, stored),
               median and max of 10 links (own stack only: its enrichment may fetch 127.0.0.1)

Prints a table and writes ``bench/results/webapp-<timestamp>.json`` and ``bench/results/webapp-latest.json``.
Targets: warm ≤ 1 s, cold ≤ 5 s, keystroke ≤ 150 ms, first load ≤ 150 KiB, paste → preview ≤ 3 s.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import platform
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from result_files import write_results  # bench/ is on sys.path when this script runs

REPO = Path(__file__).resolve().parents[1]
DIST = REPO / "web" / "dist"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WORDS = ["climate", "budget", "python", "recipes", "travel", "science", "garden", "history", "music", "design"]
QUERIES = ["c", "cl", "cli", "clim", "p", "py", "pyt", "tag:news", "garden", "zzz"]
SEED_DB = """(session) => new Promise((resolve, reject) => {
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
    };
})"""
# Resolves with ms from the input event to the list's next change (one for the local answer, a second
# for the server's), or null when nothing changes within 3 s.
KEYSTROKE = """(query) => new Promise((resolve) => {
    const list = document.querySelector('[aria-label="Bookmarks"]').parentElement;
    const input = document.getElementById("search");
    const times = [];
    const began = performance.now();
    const observer = new MutationObserver(() => {
        const now = performance.now() - began;
        if (!times.length || now - times[times.length - 1] > 60) times.push(now);
    });
    observer.observe(list, { childList: true, subtree: true, characterData: true });
    input.value = query;
    input.dispatchEvent(new Event("input", { bubbles: true }));
    setTimeout(() => { observer.disconnect(); resolve(times); }, 2000);
})"""
SCROLL = """() => new Promise((resolve) => {
    const el = document.querySelector(".list-scroll");
    const frames = [];
    let last = performance.now();
    const step = () => {
        const now = performance.now();
        frames.push(now - last);
        last = now;
        if (el.scrollTop + el.clientHeight >= el.scrollHeight - 2) return resolve(frames);
        el.scrollTop += el.clientHeight;
        requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
})"""


def first_load_bytes() -> dict[str, int]:
    shell = (DIST / "index.html").read_text(encoding="utf-8")
    files = ["index.html"] + [p.relative_to(DIST).as_posix() for p in sorted((DIST / "assets").iterdir())]
    # The reader's stylesheet loads only when the reader opens.
    files = [f for f in files if f == "index.html" or (f.split("/")[-1] in shell and "reader" not in f)]
    sizes = {f: len(gzip.compress((DIST / f).read_bytes(), compresslevel=9)) for f in files}
    return {"files": len(files), "gzip_bytes": sum(sizes.values()), **{f"gzip:{k}": v for k, v in sizes.items()}}


async def seed_library(base_url: str, count: int) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=base_url, timeout=60, trust_env=False) as http:
        session: dict[str, Any] = (await http.post("/v1/auth/anonymous")).raise_for_status().json()
        headers = {"Authorization": f"Bearer {session['accessToken']}"}
        queue: asyncio.Queue[int] = asyncio.Queue()
        for n in range(count):
            queue.put_nowait(n)

        async def worker() -> None:
            while not queue.empty():
                n = queue.get_nowait()
                body = {
                    "url": f"https://site{n % 400}.example/articles/{n}",
                    "title": f"{WORDS[n % 10].title()} notes number {n} about {WORDS[(n * 7) % 10]}",
                    "userTags": [WORDS[n % 10], "news" if n % 3 == 0 else "later"],
                    "notes": f"Saved while reading about {WORDS[(n * 3) % 10]}.",
                    "clientSavedAt": f"2025-{1 + n % 12:02d}-{1 + n % 28:02d}T10:{n % 60:02d}:00Z",
                }
                response = await http.put(f"/v1/bookmarks/b{n:06d}", json=body, headers=headers)
                response.raise_for_status()

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(16)))
        print(f"seeded {count} bookmarks in {time.perf_counter() - began:.1f} s")
        # The browser signs in with its own token family (the seed's refresh token is never used twice).
        refreshed = (await http.post("/v1/auth/refresh", json={"refreshToken": session["refreshToken"]})).json()
        return dict(refreshed)


async def wait_for(page: Any, script: str) -> None:
    """Polls ``script`` (an expression) every 10 ms: the page's policy forbids the eval that
    ``page.wait_for_function`` needs."""
    deadline = time.perf_counter() + 300
    while not await page.evaluate(f"() => Boolean({script})"):
        if time.perf_counter() > deadline:
            raise TimeoutError(script)
        await asyncio.sleep(0.01)


class PreviewSite:
    """Pages with a title, a description and a 600×315 picture, on 127.0.0.1 (a thread of http.server)."""

    def __init__(self, pages: int = 10) -> None:
        import io
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from PIL import Image

        files: dict[str, tuple[str, bytes]] = {}
        for n in range(pages):
            picture = io.BytesIO()
            Image.effect_noise((600, 315), 30 + n).convert("RGB").save(picture, "JPEG", quality=85)
            files[f"/pictures/{n}.jpg"] = ("image/jpeg", picture.getvalue())
            files[f"/story/{n}"] = ("text/html; charset=utf-8", PREVIEW_PAGE.format(n=n).encode())

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's API
                content_type, body = files.get(self.path, ("text/plain", b""))
                self.send_response(200 if body else 404)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.pages = pages
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, n: int) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/story/{n}"


PREVIEW_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Story {n}</title>
<meta property="og:title" content="Field notes from the coast, part {n}">
<meta property="og:description" content="What the tide left behind this week.">
<meta property="og:image" content="/pictures/{n}.jpg"></head><body><p>Tides and shells.</p></body></html>"""


async def measure_paste(page: Any, site: PreviewSite) -> dict[str, Any]:
    """Typed and saved → the row shows the page's title and its picture, loaded from the platform."""
    times = []
    for n in range(site.pages):
        title = f"Field notes from the coast, part {n}"
        began = time.perf_counter()
        await page.get_by_role("textbox", name="URL").fill(site.url(n))
        await page.get_by_role("button", name="Save").click()
        await wait_for(
            page,
            "[...document.querySelectorAll('[aria-label=\"Bookmarks\"] li')].some(li => "
            f"li.textContent.includes({json.dumps(title)}) && "
            "(li.querySelector('img.thumb')?.naturalWidth ?? 0) > 0)",
        )
        times.append((time.perf_counter() - began) * 1000)
    return {"paste_to_preview_median_ms": round(statistics.median(times)), "paste_to_preview_max_ms": round(max(times))}


async def measure_browser(
    base_url: str, session: dict[str, Any], count: int, site: PreviewSite | None = None
) -> dict[str, Any]:
    from playwright.async_api import async_playwright

    out: dict[str, Any] = {}
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS
        )
        context = await browser.new_context(viewport={"width": 1280, "height": 800}, base_url=base_url)
        page = await context.new_page()
        await page.goto("/app/manifest.webmanifest")
        await page.evaluate(SEED_DB, session)

        began = time.perf_counter()
        await page.goto("/")
        await wait_for(page, "document.querySelector('[aria-label=\"Bookmarks\"] li') !== null")
        out["cold_first_rows_ms"] = round((time.perf_counter() - began) * 1000)
        await wait_for(
            page,
            f"document.querySelector('[aria-label=\"Sync\"]')?.textContent.includes('Synced') && "
            f"document.querySelector('.list-count').textContent.replace(/[^0-9]/g, '') === '{count}'",
        )
        out["cold_full_sync_ms"] = round((time.perf_counter() - began) * 1000)

        warm = []
        for _ in range(3):
            began = time.perf_counter()
            await page.reload()
            await wait_for(page, "document.querySelector('[aria-label=\"Bookmarks\"] li') !== null")
            warm.append((time.perf_counter() - began) * 1000)
            # Settled before the next reload: a reload cut through a token refresh would end the session.
            await wait_for(page, "document.querySelector('[aria-label=\"Sync\"]')?.textContent.includes('Synced')")
        out["warm_first_rows_ms"] = round(statistics.median(warm))

        local, server = [], []
        for query in QUERIES:
            times = await page.evaluate(KEYSTROKE, query)
            if times:
                local.append(times[0])
            if len(times) > 1:
                server.append(times[-1])
        out["keystroke_local_median_ms"] = round(statistics.median(local), 1) if local else None
        out["keystroke_local_max_ms"] = round(max(local), 1) if local else None
        out["keystroke_server_median_ms"] = round(statistics.median(server), 1) if server else None
        await page.evaluate(KEYSTROKE, "")

        if site is not None:
            out |= await measure_paste(page, site)

        frames = await page.evaluate(SCROLL)
        ordered = sorted(frames[1:])
        out["scroll_frames"] = len(frames)
        out["scroll_long_frames_over_50ms"] = sum(1 for f in ordered if f > 50)
        out["scroll_frame_p95_ms"] = round(ordered[int(0.95 * (len(ordered) - 1))], 1) if ordered else None
        out["scroll_frame_max_ms"] = round(ordered[-1], 1) if ordered else None
        await browser.close()
    return out


def print_table(result: dict[str, Any]) -> None:
    targets = {
        "first_load_gzip_kib": "≤ 150",
        "cold_full_sync_ms": "≤ 5000",
        "warm_first_rows_ms": "≤ 1000",
        "keystroke_local_median_ms": "≤ 150",
        "paste_to_preview_median_ms": "≤ 3000",
    }
    print(f"\n{'measure':34} {'value':>12}  target")
    for key, value in result["figures"].items():
        print(f"{key:34} {value!s:>12}  {targets.get(key, '')}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bookmarks", type=int, default=10_000)
    parser.add_argument("--url", help="an already running gateway serving the app (default: start a stack)")
    args = parser.parse_args()
    if not (DIST / "index.html").is_file():
        raise SystemExit("web/dist is missing: run `make web` first")
    load = first_load_bytes()
    stack = None
    base_url = args.url
    if base_url is None:
        from devstack.stack import Stack, StackConfig

        config = StackConfig.for_tests(
            Path(tempfile.mkdtemp(prefix="bench-webapp-")),
            services=True,
            # The local site of "paste"; no per-user limit on the seeding PUTs.
            extra_env={"ENRICHMENT_ALLOW_PRIVATE_NETWORKS": "true", "GATEWAY_RATE_LIMIT_PER_MINUTE": "0"},
        )
        stack = Stack(config)
        stack.start()
        base_url = stack.gateway_url
    try:
        session = await seed_library(base_url, args.bookmarks)
        figures = {
            "first_load_gzip_kib": round(load["gzip_bytes"] / 1024, 1),
            **await measure_browser(base_url, session, args.bookmarks, PreviewSite() if stack is not None else None),
        }
    finally:
        if stack is not None:
            stack.stop()
    result = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "bookmarks": args.bookmarks,
        "first_load": load,
        "figures": figures,
    }
    print_table(result)
    print(f"\nresults written to {write_results('webapp', result, latest=True)}")


if __name__ == "__main__":
    asyncio.run(main())
