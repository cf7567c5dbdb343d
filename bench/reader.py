"""Reader benchmark: the web app's Reader opening a 100 KB saved page with 200 highlights.

    .venv/bin/python bench/reader.py [--opens 10]

Starts its own stack (private data dir, free ports; enrichment may fetch 127.0.0.1) serving ``web/dist``
(run ``make web`` first) and a local site with one 100 KB article. One anonymous user saves the article,
has it enriched (the saved copy the Reader shows), and marks 200 passages spread over it through the API.
A headless Chromium (/usr/bin/chromium) opens the app as that user, and ``--opens`` times:

  open    the "Read" button of the bookmark's details → the saved copy shown with all 200 marks drawn
          (the copy fetched, sanitised, rendered in its frame, and every highlight anchored in its text)

Prints median and max; writes ``bench/results/reader-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from result_files import write_results  # bench/ is on sys.path when this script runs
from webapp import CHROMIUM_ARGS, DIST, SEED_DB, wait_for  # bench/ is on sys.path when this script runs

WORDS = (
    "tide pool anemone crab rock water shell kelp urchin starfish wave sand shore gull salt moon current "
    "barnacle limpet mussel heron drift foam reef cove harbor lantern map compass rope sail"
).split()
MARKS = 200
TITLE = "A long walk along the tide pools"


def article(size: int = 100_000) -> tuple[str, list[str]]:
    """The page's HTML and its paragraphs' text (about ``size`` bytes of text)."""
    rng = random.Random(7)
    paragraphs: list[str] = []
    length = 0
    while length < size:
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 18))).capitalize() + "." for _ in range(5)
        ]
        paragraphs.append(" ".join(sentences))
        length += len(paragraphs[-1]) + 1
    body = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    head = f"<!doctype html><html><head><title>{TITLE}</title></head>"
    html = f"{head}<body><article><h1>{TITLE}</h1>{body}</article></body></html>"
    return html, paragraphs


def passages(paragraphs: list[str], count: int) -> list[dict[str, Any]]:
    """``count`` passages of a few words, one every few paragraphs, each with its context."""
    chosen = []
    for i in range(count):
        text = paragraphs[(i * len(paragraphs)) // count]
        words = text.split(" ")
        at = (i * 7) % max(1, len(words) - 12)
        quote = " ".join(words[at : at + 6])
        start = text.index(quote)
        prefix, suffix = text[max(0, start - 32) : start], text[start + len(quote) : start + len(quote) + 32]
        chosen.append({"quote": quote, "prefix": prefix, "suffix": suffix})
    return chosen


class Site:
    def __init__(self, html: str) -> None:
        page = html.encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's API
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/articles/tide-pools"


async def prepare(base_url: str, site: Site, paragraphs: list[str]) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=base_url, timeout=60, trust_env=False) as http:
        session: dict[str, Any] = (await http.post("/v1/auth/anonymous")).raise_for_status().json()
        headers = {"Authorization": f"Bearer {session['accessToken']}"}
        (await http.patch("/v1/me/settings", json={"useAi": True}, headers=headers)).raise_for_status()
        (
            await http.put("/v1/bookmarks/article", json={"url": site.url, "title": TITLE}, headers=headers)
        ).raise_for_status()
        enqueue = {"clientBookmarkId": "article", "url": site.url, "clientSavedAt": "2026-01-01T00:00:00Z"}
        (await http.post("/v1/enrichment/enqueue", json=enqueue, headers=headers)).raise_for_status()
        deadline = time.monotonic() + 180
        while True:
            status = (
                await http.get("/v1/enrichment/status", params={"clientBookmarkId": "article"}, headers=headers)
            ).json()
            if status["data"]["status"] == "completed":
                break
            if status["data"]["status"] == "failed" or time.monotonic() > deadline:
                raise RuntimeError(f"enrichment did not complete: {status}")
            await asyncio.sleep(0.5)
        for i, passage in enumerate(passages(paragraphs, MARKS)):
            body = {"bookmarkId": "article", **passage, "note": f"Note {i}" if i % 4 == 0 else ""}
            (await http.put(f"/v1/highlights/m{i:03}", json=body, headers=headers)).raise_for_status()
        refreshed = (await http.post("/v1/auth/refresh", json={"refreshToken": session["refreshToken"]})).json()
        return dict(refreshed)


MARKS_DRAWN = f"""(() => {{
    const doc = document.querySelector('.reader-frame')?.contentDocument;
    return !!doc && doc.querySelectorAll('mark[data-highlight]').length >= {MARKS};
}})()"""


async def measure(base_url: str, session: dict[str, Any], opens: int) -> list[float]:
    from playwright.async_api import async_playwright

    times: list[float] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS
        )
        context = await browser.new_context(viewport={"width": 1280, "height": 900}, base_url=base_url)
        page = await context.new_page()
        await page.goto("/app/manifest.webmanifest")
        await page.evaluate(SEED_DB, session)
        await page.goto("/")
        await wait_for(page, "document.querySelector('[aria-label=\"Sync\"]')?.textContent.includes('Synced')")
        row = page.get_by_role("list", name="Bookmarks").get_by_role("listitem").filter(has_text=TITLE)
        for _ in range(opens):
            await row.get_by_role("button", name="Details").click()
            read = page.get_by_role("region", name="Bookmark details").get_by_role("button", name="Read", exact=True)
            began = time.perf_counter()
            await read.click()
            await wait_for(page, MARKS_DRAWN)
            times.append((time.perf_counter() - began) * 1000)
            await page.get_by_role("button", name="Close reader").click()
        await browser.close()
    return times


async def run(opens: int) -> dict[str, Any]:
    from devstack.stack import Stack, StackConfig

    html, paragraphs = article()
    site = Site(html)
    config = StackConfig.for_tests(
        Path(tempfile.mkdtemp(prefix="bench-reader-")),
        services=True,
        extra_env={"ENRICHMENT_ALLOW_PRIVATE_NETWORKS": "true", "GATEWAY_RATE_LIMIT_PER_MINUTE": "0"},
    )
    with Stack(config) as stack:
        session = await prepare(stack.gateway_url, site, paragraphs)
        times = await measure(stack.gateway_url, session, opens)
    site.server.shutdown()
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "page_bytes": len(html.encode()),
        "highlights": MARKS,
        "opens": len(times),
        "open_median_ms": round(statistics.median(times)),
        "open_max_ms": round(max(times)),
        "times_ms": [round(t) for t in times],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opens", type=int, default=10)
    args = parser.parse_args()
    if not (DIST / "index.html").is_file():
        raise SystemExit("web/dist is missing: run `make web` first")
    result = asyncio.run(run(args.opens))
    median, most = result["open_median_ms"], result["open_max_ms"]
    print(f"Reader, {result['page_bytes'] // 1024} KB page, {MARKS} highlights: open to all drawn, "
          f"median {median} ms, max {most} ms ({result['opens']} opens)")  # fmt: skip
    path = write_results("reader", result)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
