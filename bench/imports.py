"""Import benchmark: a 10,000-item Pocket CSV and a 10,000-item Netscape file imported end to
end through the gateway, until every bookmark is visible in delta.

    .venv/bin/python bench/imports.py [--base-url URL] [--items 10000] [--follow-web]

Without ``--base-url`` it starts its own stack (private data dir, free ports). For each file: seconds from
the start of the upload to ``completed`` and to the last bookmark seen in delta (a device following the
stream, limit=1000), and the peak RSS of the bookmarks process(es) during the run (sampled every 50 ms
with psutil; needs the stack on this machine), and the CPU seconds per imported item of each of the stack's
processes (psutil; the stack this script started only). Writes ``bench/results/imports-<timestamp>.json`` and
``bench/results/imports-latest.json``. Goal: 10,000 items visible in delta in ≤ 15 s.

Then the priority of interactive enrichment: a Pro user with AI on enqueues pages of a
local site one at a time and waits for each to complete, first on an idle stack, then while the same user's
10,000-item Pocket import has queued its bulk (low-priority) jobs: seconds from enqueue to ``completed``.

``--follow-web``: instead, each file is imported into a fresh account that the real web app (web/dist,
served by the gateway, in Debian's Chromium through Playwright) has open and follows live: the import's
time to visible in delta with the app following, and when the app's library (its IndexedDB) holds every
bookmark; with the delta requests the app made (pages of ``limit``) while following.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from result_files import write_results  # bench/ is on sys.path when this script runs
from run import ADMIN_TOKEN, Api, LocalSite  # bench/ is on sys.path when this script runs
from webapp import SEED_DB

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]  # fmt: skip
FILES = (
    ("pocket_csv", "pocket.csv", "https://pocket.bench.example/"),
    ("netscape", "bookmarks.html", "https://netscape.bench.example/"),
)


def pocket_csv(count: int) -> bytes:
    rows = ["title,url,time_added,tags,status"]
    for i in range(count):
        status = "archive" if i % 3 == 0 else "unread"
        rows.append(
            f'"Article {i}, a title",https://pocket.bench.example/{i}?utm_source=pocket,{1600000000 + i},'
            f"tag{i % 50}|reading,{status}"
        )
    return ("\n".join(rows) + "\n").encode()


def netscape(count: int) -> bytes:
    out = ["<!DOCTYPE NETSCAPE-Bookmark-file-1>", "<TITLE>Bookmarks</TITLE><H1>Bookmarks</H1>", "<DL><p>"]
    per_folder = 500
    for folder in range(0, count, per_folder):
        out.append(f"<DT><H3>Folder {folder // per_folder}</H3>\n<DL><p>")
        for i in range(folder, min(count, folder + per_folder)):
            out.append(
                f'<DT><A HREF="https://netscape.bench.example/{i}" ADD_DATE="{1600000000 + i}" '
                f'TAGS="t{i % 20}">Page {i} &amp; more</A>\n<DD>Description {i}'
            )
        out.append("</DL><p>")
    out.append("</DL><p>")
    return "\n".join(out).encode()


class RssSampler:
    """Peak RSS of the ``python -m bookmarks`` processes while running."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            total = 0
            # The stack this script started (its descendants), else every one on the machine (--base-url).
            procs = psutil.Process().children(recursive=True) or list(psutil.process_iter())
            for proc in procs:
                try:
                    cmd = proc.cmdline()
                    if cmd[-2:] == ["-m", "bookmarks"]:
                        total += proc.memory_info().rss
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            self.peak = max(self.peak, total)
            self._stop.wait(0.05)


def psutil_load() -> float:
    import psutil

    return float(psutil.getloadavg()[0])


class CpuMeter:
    """CPU seconds (user + system) of the stack's processes between its creation and ``ms_per_item``, by
    component: every descendant of this process (the stack it started), grouped by its command line."""

    def __init__(self) -> None:
        self.start = self._sample()

    @staticmethod
    def _name(cmd: list[str]) -> str:
        if "-m" in cmd[:-1]:
            return cmd[cmd.index("-m") + 1]
        first = Path(cmd[0]).name if cmd else "?"
        return "postgres" if first in ("postgres", "postmaster") or "postgres" in " ".join(cmd[:1]) else first

    def _sample(self) -> dict[int, tuple[str, float]]:
        import psutil

        found: dict[int, tuple[str, float]] = {}
        for proc in psutil.Process().children(recursive=True):
            try:
                times = proc.cpu_times()
                found[proc.pid] = (self._name(proc.cmdline()), times.user + times.system)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return found

    def ms_per_item(self, items: int) -> dict[str, float]:
        """Milliseconds of CPU per item by component (a process that started meanwhile counts from zero;
        one that ended meanwhile is missing: the numbers are a floor)."""
        end = self._sample()
        spent: dict[str, float] = {}
        for pid, (name, seconds) in end.items():
            before = self.start.get(pid, (name, 0.0))[1]
            spent[name] = spent.get(name, 0.0) + seconds - before
        return {name: round(s * 1000 / items, 3) for name, s in sorted(spent.items()) if s >= 0.01}


class WebApp:
    """The real web app in Chromium, signed in to an account (its session seeded where the app keeps it),
    following the account live; counts the delta requests it makes."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self._deltas: list[str] = []
        page.on("request", lambda r: self._deltas.append(r.url) if "/v1/bookmarks/delta" in r.url else None)

    @classmethod
    async def open(cls, browser: Any, base_url: str, session: dict[str, Any]) -> WebApp:
        context = await browser.new_context(base_url=base_url, viewport={"width": 1280, "height": 800})
        page = await context.new_page()
        await page.goto("/app/manifest.webmanifest")  # a plain file of the app: it does not start here
        await page.evaluate(SEED_DB, session)  # the session where the app keeps it
        await page.goto("/")
        await page.get_by_role("list", name="Bookmarks").wait_for(state="attached")
        await page.get_by_role("status", name="Sync", exact=True).filter(has_text="Synced").wait_for(timeout=60_000)
        return cls(page)

    async def stored(self) -> int:
        """How many bookmarks the app's library holds (its IndexedDB store "bookmarks")."""
        return int(await self.page.evaluate(_COUNT_STORED))

    async def holds(self, count: int, started: float) -> float:
        """Seconds from ``started`` until the library holds ``count`` bookmarks."""
        while True:
            if await self.stored() >= count:
                return round(time.perf_counter() - started, 2)
            await asyncio.sleep(0.1)

    def delta_requests(self) -> int:
        return len(self._deltas)

    def delta_limits(self) -> list[str]:
        from urllib.parse import parse_qs, urlsplit

        return [parse_qs(urlsplit(u).query).get("limit", ["?"])[0] for u in self._deltas]

    async def close(self) -> None:
        await self.page.context.close()


_COUNT_STORED = """() => new Promise((resolve, reject) => {
    const open = indexedDB.open("bookmarks");
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
        const db = open.result;
        const request = db.transaction("bookmarks").objectStore("bookmarks").count();
        request.onsuccess = () => { db.close(); resolve(request.result); };
        request.onerror = () => { db.close(); reject(request.error); };
    };
})"""


async def get_json(http: httpx.AsyncClient, path: str, **kwargs: Any) -> Any:
    """GET with retries on 5xx (on a loaded machine an upstream timeout is not the end of the run)."""
    for _ in range(20):
        response = await http.get(path, **kwargs)
        if response.status_code < 500:
            return response.raise_for_status().json()
        await asyncio.sleep(0.5)
    return response.raise_for_status().json()


async def visible_in_delta(http: httpx.AsyncClient, headers: dict[str, str], prefix: str, count: int) -> int:
    """Follow the delta stream from the start until ``count`` bookmarks whose URL starts with ``prefix``."""
    seen: set[str] = set()
    cursor: str | None = None
    while True:
        params = {"limit": "1000"} | ({"cursor": cursor} if cursor else {})
        page = await get_json(http, "/v1/bookmarks/delta", params=params, headers=headers)
        data = page["data"]
        seen |= {b["clientBookmarkId"] for b in data["upserts"] if b["url"].startswith(prefix)}
        if len(seen) >= count:
            return len(seen)
        if data["nextCursor"] is None:
            await asyncio.sleep(0.05)
            continue
        cursor = data["nextCursor"]


async def one_import(
    http: httpx.AsyncClient,
    name: str,
    content: bytes,
    prefix: str,
    count: int,
    headers: dict[str, str] | None = None,
    web: WebApp | None = None,
) -> dict[str, Any]:
    if headers is None:
        session = (await http.post("/v1/auth/anonymous")).raise_for_status().json()
        headers = {"Authorization": f"Bearer {session['accessToken']}"}
    cpu = CpuMeter()
    with RssSampler() as rss:
        started = time.perf_counter()
        web_task = asyncio.create_task(web.holds(count, started)) if web is not None else None
        response = await http.post("/v1/imports", headers=headers, files={"file": (name, content)})
        response.raise_for_status()
        uploaded = time.perf_counter() - started
        import_id = response.json()["data"]["id"]
        delta = asyncio.create_task(visible_in_delta(http, headers, prefix, count))
        while True:
            record = (await get_json(http, f"/v1/imports/{import_id}", headers=headers))["data"]
            if record["status"] in ("completed", "failed"):
                break
            await asyncio.sleep(0.1)
        completed = time.perf_counter() - started
        visible = await delta
        in_delta = time.perf_counter() - started
        web_s = await web_task if web_task is not None else None
    cpu_ms = cpu.ms_per_item(count)
    extra: dict[str, Any] = {}
    if web is not None:
        extra = {"web_library_holds_all_s": web_s, "web_delta_requests": web.delta_requests(),
                 "web_delta_limits": sorted(set(web.delta_limits()))}  # fmt: skip
    return {
        "items": count,
        "bytes": len(content),
        "status": record["status"],
        "format": record["format"],
        "created": record["created"],
        "visible_in_delta": visible,
        "upload_s": round(uploaded, 2),
        "completed_s": round(completed, 2),
        "visible_in_delta_s": round(in_delta, 2),
        "bookmarks_peak_rss_mib": round(rss.peak / 2**20, 1),
        "load_average_1m": round(psutil_load(), 2),
        "cpu_ms_per_item": cpu_ms,
        **extra,
    }


async def enrich_one(api: Api, headers: dict[str, str], bookmark_id: str, url: str) -> float:
    """Seconds from an interactive enqueue of ``url`` to its ``completed`` status."""
    (await api.http.put(f"/v1/bookmarks/{bookmark_id}", json={"url": url}, headers=headers)).raise_for_status()
    started = time.perf_counter()
    body = {"clientBookmarkId": bookmark_id, "url": url, "clientSavedAt": "2026-11-23T00:00:00Z"}
    (await api.http.post("/v1/enrichment/enqueue", json=body, headers=headers)).raise_for_status()
    while time.perf_counter() - started < 300:
        status = (
            await get_json(api.http, "/v1/enrichment/status", params={"clientBookmarkId": bookmark_id}, headers=headers)
        )["data"]["status"]
        if status in ("completed", "failed"):
            return time.perf_counter() - started
        await asyncio.sleep(0.02)
    return float("inf")


async def interactive_during_import(api: Api, items: int, samples: int = 5) -> dict[str, Any]:
    site = LocalSite()
    try:
        _, headers = await api.new_user(pro=True, use_ai=True)
        run_id = uuid.uuid4().hex[:6]
        idle = [await enrich_one(api, headers, f"idle{i}", f"{site.url}/{run_id}/idle{i}") for i in range(samples)]
        task = asyncio.create_task(
            one_import(api.http, "pocket.csv", pocket_csv(items), "https://pocket.bench.example/", items, headers)
        )
        await asyncio.sleep(3)  # the first batches are in and their bulk jobs queued
        busy = [await enrich_one(api, headers, f"busy{i}", f"{site.url}/{run_id}/busy{i}") for i in range(samples)]
        imported = await task
    finally:
        site.close()
    return {"samples": samples, "idle_s": [round(t, 2) for t in idle], "during_import_s": [round(t, 2) for t in busy],
            "import_completed_s": imported["completed_s"]}  # fmt: skip


def content_of(name: str, items: int) -> bytes:
    return pocket_csv(items) if name.endswith(".csv") else netscape(items)


async def run_follow_web(base_url: str, items: int) -> dict[str, Any]:
    """Each file into a fresh account that the web app has open and follows live."""
    from playwright.async_api import async_playwright

    results: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=base_url, timeout=120) as http, async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            for key, name, prefix in FILES:
                session = (await http.post("/v1/auth/anonymous")).raise_for_status().json()
                headers = {"Authorization": f"Bearer {session['accessToken']}"}
                web = await WebApp.open(browser, base_url, session)
                try:
                    results[key] = await one_import(
                        http, name, content_of(name, items), prefix, items, headers, web=web
                    )
                finally:
                    await web.close()
        finally:
            await browser.close()
    return results


async def run(base_url: str, items: int, follow_web: bool = False) -> dict[str, Any]:
    if follow_web:
        return {"follow_web": await run_follow_web(base_url, items)}
    async with httpx.AsyncClient(base_url=base_url, timeout=120) as http:
        results = {
            key: await one_import(http, name, content_of(name, items), prefix, items) for key, name, prefix in FILES
        }
    api = Api(base_url)
    try:
        results["interactive_enrichment"] = await interactive_during_import(api, items)
    except httpx.HTTPError as exc:  # the imports' figures stand; say what stopped this part
        results["interactive_enrichment"] = {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        await api.http.aclose()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", help="a running stack's gateway (default: start one)")
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--follow-web", action="store_true", help="the web app in Chromium follows each import live")
    args = parser.parse_args()
    if args.base_url:
        results = asyncio.run(run(args.base_url, args.items, args.follow_web))
    else:
        from devstack.stack import Stack, StackConfig

        with tempfile.TemporaryDirectory(prefix="bench-imports-") as data_dir:
            config = StackConfig.for_tests(
                Path(data_dir),
                extra_env={
                    "GATEWAY_RATE_LIMIT_PER_MINUTE": "10000000",
                    "GATEWAY_IP_RATE_LIMIT_PER_MINUTE": "10000000",
                    "AUTH_ANONYMOUS_RATE_LIMIT_PER_MINUTE": "10000000",
                    "LOG_LEVEL": "WARNING",
                    "ADMIN_TOKEN": ADMIN_TOKEN,
                    "ENRICHMENT_ALLOW_PRIVATE_NETWORKS": "true",
                    "ENRICHMENT_BROWSER": "off",
                },
                output=open(Path(data_dir) / "stack.log", "w"),  # noqa: SIM115 - lives as long as the stack
            )
            print("bench: starting the stack …", flush=True)
            with Stack(config) as stack:
                results = asyncio.run(run(stack.gateway_url, args.items, args.follow_web))
    report = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "imports": results,
    }
    write_results("imports-web" if args.follow_web else "imports", report, latest=True)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
