"""Link preview benchmark (docs/decisions/0138-link-previews.md): latency and CPU of GET /v1/previews
through the gateway, cache misses on a local site and cache hits, and the bytes stored per image.

    .venv/bin/python bench/previews.py [--pages 120] [--rounds 3]

Starts its own stack (private data dir, free ports, ENRICHMENT_ALLOW_PRIVATE_NETWORKS=true so the
enrichment service may fetch the local site) and a local site on 127.0.0.1 serving ``--pages`` article
pages, each with a head like a news site's (title, description, Open Graph, icons, ~20 KiB of head
scripts and styles) followed by a long body, its own 1200×630 JPEG picture and a 32×32 icon.
Each round, interleaved:

  miss   every page once, concurrency 4 (a person pasting links, several devices): fetch head,
         picture and icon, decode and re-encode, store
  hit    the same URLs again, concurrency 16: answered from the shared cache

Reports per phase the median over rounds of p50/p99 latency, previews per second and CPU ms per
preview of the gateway, the enrichment API and PostgreSQL (their process trees), net of each one's
idle CPU measured first; then the stored bytes of pictures and icons. Prints a table; writes
``bench/results/previews-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
from PIL import Image
from result_files import write_results  # bench/ is on sys.path when this script runs

from devstack.stack import Stack, StackConfig

IDLE_SECONDS = 5.0
PER_USER = 50  # under the 60-a-minute limit
PROCESSES = ("gateway", "enrichment", "postgres")


def _jpeg(seed: int) -> bytes:
    """A photo-like 1200×630 picture (gradients and grain), different per page."""
    size = (1200, 630)
    gradient = Image.linear_gradient("L").rotate(seed * 7 % 360).resize(size)
    grain = Image.effect_noise(size, 24 + seed % 16)
    picture = Image.merge("RGB", (gradient, grain, Image.radial_gradient("L").resize(size)))
    out = io.BytesIO()
    picture.save(out, "JPEG", quality=85)
    return out.getvalue()


def _icon() -> bytes:
    out = io.BytesIO()
    Image.new("RGBA", (32, 32), (20, 120, 200, 255)).save(out, "PNG")
    return out.getvalue()


def _page(index: int) -> bytes:
    scripts = "".join(f"<script>window.analytics{n} = {{id: {n}, queue: []}};</script>" for n in range(200))
    head = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>Article {index} | The Example Times</title>"
        f"<meta name='description' content='What happened in story {index}, explained in two sentences.'>"
        f"<meta property='og:title' content='Story number {index}: what it means for you'>"
        f"<meta property='og:description' content='A longer description of story {index} for cards.'>"
        "<meta property='og:site_name' content='The Example Times'>"
        f"<meta property='og:image' content='/img/{index}.jpg'>"
        f"<link rel='canonical' href='/articles/{index}'>"
        "<link rel='icon' sizes='32x32' href='/icon.png'>"
        f"<style>{'body{margin:0} ' * 400}</style>{scripts}</head>"
    )
    return (head + "<body>" + "<p>Paragraph of the article body.</p>" * 5000 + "</body></html>").encode()


class Site:
    def __init__(self, pages: int) -> None:
        self.files: dict[str, tuple[str, bytes]] = {"/icon.png": ("image/png", _icon())}
        for index in range(pages):
            self.files[f"/articles/{index}"] = ("text/html; charset=utf-8", _page(index))
            self.files[f"/img/{index}.jpg"] = ("image/jpeg", _jpeg(index))
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - http.server's API
                content_type, body = site.files.get(self.path.split("?", 1)[0], ("text/plain", b""))
                self.send_response(200 if body else 404)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # a head-only reader hangs up early

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, round_index: int, index: int) -> str:
        # A query per round makes each round's misses real misses (a new normalized URL).
        return f"http://127.0.0.1:{self.port}/articles/{index}?round={round_index}"


def _cpu_seconds(pid: int) -> float:
    root = psutil.Process(pid)
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def _cpu(pids: dict[str, int]) -> dict[str, float]:
    return {name: _cpu_seconds(pid) for name, pid in pids.items()}


async def _users(gateway: str, count: int) -> list[dict[str, str]]:
    async with httpx.AsyncClient(base_url=gateway, timeout=30) as http:
        sessions = [(await http.post("/v1/auth/anonymous")).raise_for_status().json() for _ in range(count)]
    return [{"Authorization": f"Bearer {s['accessToken']}"} for s in sessions]


async def _phase(
    pids: dict[str, int],
    idle: dict[str, float],
    urls: list[str],
    concurrency: int,
    call: Callable[[int, str], Awaitable[None]],
) -> dict[str, Any]:
    latencies: list[float] = []
    queue = list(enumerate(urls))

    async def worker() -> None:
        while queue:
            index, url = queue.pop()
            started = time.perf_counter()
            await call(index, url)
            latencies.append(time.perf_counter() - started)

    before, started = _cpu(pids), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    after, elapsed = _cpu(pids), time.perf_counter() - started
    n = len(urls)
    latencies.sort()
    return {
        "previews": n,
        "per_s": n / elapsed,
        "p50_ms": latencies[n // 2] * 1000,
        "p99_ms": latencies[min(n - 1, int(n * 0.99))] * 1000,
        **{f"cpu_ms_{name}": (after[name] - before[name] - idle[name] * elapsed) * 1000 / n for name in pids},
    }


async def run(stack: Stack, site: Site, args: argparse.Namespace) -> dict[str, Any]:
    pids = {
        "gateway": stack.service_processes["gateway"].pid,
        "enrichment": stack.service_processes["enrichment"].pid,
        "postgres": _postgres_pid(stack),
    }
    users = await _users(stack.gateway_url, -(-args.pages // PER_USER) * args.rounds * 2 + 1)
    await asyncio.sleep(2)
    before = _cpu(pids)
    await asyncio.sleep(IDLE_SECONDS)
    idle = {name: (seconds - before[name]) / IDLE_SECONDS for name, seconds in _cpu(pids).items()}
    rounds: dict[str, list[dict[str, Any]]] = {"miss": [], "hit": []}
    user_of = iter(users)
    async with httpx.AsyncClient(
        base_url=stack.gateway_url, timeout=60, limits=httpx.Limits(max_connections=32)
    ) as http:
        for round_index in range(args.rounds):
            urls = [site.url(round_index, index) for index in range(args.pages)]
            for phase, concurrency in (("miss", 4), ("hit", 16)):
                headers = [next(user_of) for _ in range(-(-args.pages // PER_USER))]

                async def call(index: int, url: str, headers: list[dict[str, str]] = headers) -> None:
                    response = await http.get("/v1/previews", params={"url": url}, headers=headers[index // PER_USER])
                    data = response.raise_for_status().json()["data"]
                    if not (data["title"] and data["imageUrl"] and data["faviconUrl"]):
                        raise RuntimeError(f"incomplete preview: {data}")

                rounds[phase].append(await _phase(pids, idle, urls, concurrency, call))
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "pages": args.pages,
        "rounds": args.rounds,
        "idle_cpu_ms_per_s": {name: round(value * 1000, 2) for name, value in idle.items()},
        "phases": {phase: _median(results) for phase, results in rounds.items()},
        "stored": await _stored(stack.dsn("enrichment")),
    }


def _postgres_pid(stack: Stack) -> int:
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if proc.info["name"] == "postgres" and str(stack.config.data_dir) in cmdline:
            return int(proc.pid)
    port = str(stack.config.pg_port)
    for proc in psutil.process_iter(["name", "cmdline"]):
        if proc.info["name"] == "postgres" and port in " ".join(proc.info["cmdline"] or []):
            return int(proc.pid)
    raise RuntimeError("the stack's postgres process was not found")


def _median(results: list[dict[str, Any]]) -> dict[str, float]:
    return {key: round(statistics.median(r[key] for r in results), 3) for key in results[0]}


async def _stored(dsn: str) -> dict[str, Any]:
    conn = await asyncpg.connect(dsn.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        rows = await conn.fetch(
            "SELECT width > 64 AS picture, count(*) AS n, avg(size_bytes)::int AS mean, max(size_bytes) AS max "
            "FROM preview_images GROUP BY 1"
        )
    finally:
        await conn.close()
    return {
        ("picture" if r["picture"] else "icon"): {"images": r["n"], "mean_bytes": r["mean"], "max_bytes": r["max"]}
        for r in rows
    }


def _table(result: dict[str, Any]) -> str:
    lines = [
        f"{'phase':<6} {'per s':>7} {'p50 ms':>8} {'p99 ms':>8} "
        + " ".join(f"{'cpu ms ' + name:>18}" for name in PROCESSES)
    ]
    for phase, row in result["phases"].items():
        lines.append(
            f"{phase:<6} {row['per_s']:>7.1f} {row['p50_ms']:>8.1f} {row['p99_ms']:>8.1f} "
            + " ".join(f"{row['cpu_ms_' + name]:>18.2f}" for name in PROCESSES)
        )
    idle = ", ".join(f"{name} {value} ms/s" for name, value in result["idle_cpu_ms_per_s"].items())
    lines.append(f"idle CPU: {idle}")
    for kind, stored in result["stored"].items():
        lines.append(f"stored {kind}s: {stored['images']}, mean {stored['mean_bytes']} B, max {stored['max_bytes']} B")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=120, help="distinct pages per round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved miss/hit rounds (median reported)")
    args = parser.parse_args()
    site = Site(args.pages)
    with tempfile.TemporaryDirectory(prefix="bench-previews-") as data_dir:
        config = StackConfig.for_tests(
            Path(data_dir),
            output=open(os.environ.get("BENCH_STACK_LOG", "/dev/null"), "w"),  # noqa: SIM115, PTH123
            extra_env={"ENRICHMENT_ALLOW_PRIVATE_NETWORKS": "true"},
        )
        with Stack(config) as stack:
            result = asyncio.run(run(stack, site, args))
    print(_table(result))
    path = write_results("previews", result)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
