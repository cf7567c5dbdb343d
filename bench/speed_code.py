"""What each speed-only construct buys: its process measured with and without it, interleaved.

    .venv/bin/python bench/speed_code.py [--rounds 5] [--writes 480] [--delta 20000] [--only bookmarks gateway]
        [--variants fast_path gate ...]

Every variant is a separate service process started by ``bench/speed_variants.py``, which patches one
construct out before serving (bench code only; production code has no switch). All variants of a group
run at once, idle while another is measured, and each round measures every variant in turn, in an order
rotated per round (A B C, B C A, ...), so machine noise reaches all of them alike. A figure is the
median over the rounds, with the spread (min–max).

bookmarks  a test stack (private PostgreSQL, broker, the five services); its own bookmarks process keeps
           the outbox relay's lock, so the variant processes serve requests only (no relay work in
           their figures). Per round and variant, at concurrency 16: creates, updates and deletes of
           ``--writes`` bookmarks each, the process's CPU (/proc, user + system) per request net of its
           idle burn, and the latency; for ``base`` and ``gate`` also 64 concurrent creates (p99); for
           ``base`` and ``stored_docs`` an initial delta sync of ``--delta`` bookmarks, ``limit=1000``
           (median page time). Idle CPU of every variant over the same 10 s window.
gateway    ``python -m gateway`` variants proxying ``PUT /v1/bookmarks/{id}`` to the stub upstream of
           ``bench/proxy_cpu.py``; per round and variant ``--writes`` × 3 writes at concurrency 16, the
           gateway's CPU per write net of its idle burn.

Prints a table and writes ``bench/results/speed_code.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from bookmarks_write_cpu import SEED_ROWS_SQL, anonymous_users
from proxy_cpu import free_port, keys, process, token, wait_up

from devstack.stack import Stack, StackConfig

ROOT = Path(__file__).resolve().parent.parent
LAUNCHER = str(Path(__file__).with_name("speed_variants.py"))
CONCURRENCY = 16
IDLE_SECONDS = 10.0
BOOKMARKS_VARIANTS = ("base", "control", "fast_path", "gate", "server", "stored_docs")
GATEWAY_VARIANTS = ("base", "control", "proxy_fast_path", "upstream", "server")
Call = Callable[[httpx.AsyncClient, int, int], Awaitable[httpx.Response]]


def cpu_seconds(pid: int) -> float:
    """On-CPU time of every thread of ``pid`` (/proc schedstat, nanoseconds: finer than the 10 ms ticks
    of /proc stat, which would make a 10 s idle window read in steps of 1 ms/s)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


class Variant:
    def __init__(self, name: str, proc: Any, base: str) -> None:
        self.name, self.proc, self.base = name, proc, base
        self.idle = 0.0  # CPU seconds per second with no traffic
        self.samples: dict[str, list[float]] = {}

    def add(self, key: str, value: float) -> None:
        self.samples.setdefault(key, []).append(value)


async def closed_loop(
    variant: Variant, concurrency: int, per_worker: int, call: Call, expect: int
) -> tuple[float, list[float]]:
    """Net CPU ms per request of the variant's process, and each request's latency (ms)."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=variant.base, timeout=60, limits=limits) as http:

        async def worker(w: int) -> None:
            for i in range(per_worker):
                t0 = time.perf_counter()
                try:
                    response = await call(http, w, i)
                except httpx.TransportError:  # a connection the server closed under us: once more
                    variant.add("transport_errors", 1)
                    response = await call(http, w, i)
                latencies.append((time.perf_counter() - t0) * 1000)
                if response.status_code != expect:
                    raise RuntimeError(f"{variant.name}: {response.status_code}: {response.text[:200]}")

        await asyncio.gather(*(worker(w) for w in range(concurrency)))  # connections open, caches warm
        latencies.clear()
        cpu0, t0 = cpu_seconds(variant.proc.pid), time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
        used, elapsed = cpu_seconds(variant.proc.pid) - cpu0, time.perf_counter() - t0
    return (used - variant.idle * elapsed) * 1000 / len(latencies), latencies


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def measure_idle(variants: list[Variant]) -> None:
    await asyncio.sleep(2)
    before = {v.name: cpu_seconds(v.proc.pid) for v in variants}
    started = time.perf_counter()
    await asyncio.sleep(IDLE_SECONDS)
    elapsed = time.perf_counter() - started
    for v in variants:
        v.idle = (cpu_seconds(v.proc.pid) - before[v.name]) / elapsed
        v.add("idle_cpu_ms_per_s", v.idle * 1000)


# ---------------------------------------------------------------- bookmarks


def bookmark_calls(users: list[dict[str, str]], tag: str) -> dict[str, tuple[Call, int]]:
    def put(title: str) -> Call:
        def call(http: httpx.AsyncClient, w: int, i: int) -> Awaitable[httpx.Response]:
            body = {"url": f"https://example.com/{tag}/{w}/{i}", "title": f"{title} {i}", "tags": ["a", "b"]}
            return http.put(f"/v1/bookmarks/{tag}-{i}", json=body, headers=users[w % len(users)])

        return call

    def delete(http: httpx.AsyncClient, w: int, i: int) -> Awaitable[httpx.Response]:
        return http.delete(f"/v1/bookmarks/{tag}-{i}", headers=users[w % len(users)])

    return {"create": (put("created"), 200), "update": (put("updated"), 200), "delete": (delete, 204)}


async def delta_sync(variant: Variant, headers: dict[str, str]) -> tuple[float, float]:
    """Median page time (ms) of a whole initial sync, and the process's net CPU ms per page."""
    pages: list[float] = []
    async with httpx.AsyncClient(base_url=variant.base, timeout=60) as http:
        cpu0, started = cpu_seconds(variant.proc.pid), time.perf_counter()
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 1000} | ({"cursor": cursor} if cursor else {})
            t0 = time.perf_counter()
            response = await http.get("/v1/bookmarks/delta", params=params, headers=headers)
            pages.append((time.perf_counter() - t0) * 1000)
            if (cursor := response.raise_for_status().json()["data"]["nextCursor"]) is None:
                break
        used = cpu_seconds(variant.proc.pid) - cpu0 - variant.idle * (time.perf_counter() - started)
    return statistics.median(pages), used * 1000 / len(pages)


async def bookmarks_round(variant: Variant, r: int, users: list[dict[str, str]], args: argparse.Namespace) -> None:
    per_worker = max(1, args.writes // CONCURRENCY)
    # Each phase runs twice (warm-up, measured) on its own ids: create, update, delete in that order.
    for phase, (call, expect) in bookmark_calls(users[:CONCURRENCY], f"{variant.name}-{r}").items():
        cpu, latencies = await closed_loop(variant, CONCURRENCY, per_worker, call, expect)
        variant.add(f"{phase}_cpu_ms", cpu)
        variant.add(f"{phase}_p50_ms", statistics.median(latencies))
    if variant.name in ("base", "gate"):
        call, _ = bookmark_calls(users[:64], f"{variant.name}-c64-{r}")["create"]
        _, latencies = await closed_loop(variant, 64, max(1, args.writes // 64), call, 200)
        variant.add("c64_create_p99_ms", p99(latencies))
        variant.add("c64_create_p50_ms", statistics.median(latencies))
    if variant.name in ("base", "stored_docs"):
        page_ms, cpu = await delta_sync(variant, users[-1])
        variant.add("delta_page_p50_ms", page_ms)
        variant.add("delta_cpu_ms_per_page", cpu)


async def seed_delta(stack: Stack, owner: str, count: int) -> None:
    conn = await asyncpg.connect(stack.dsn("bookmarks").replace("postgresql+asyncpg://", "postgresql://"))
    try:
        for statement in SEED_ROWS_SQL.split(";\n"):
            await conn.execute(statement, uuid.UUID(owner), datetime(2026, 1, 1, tzinfo=UTC), count)
        await conn.execute("ANALYZE bookmarks")
    finally:
        await conn.close()


@contextlib.contextmanager
def variant_processes(
    service: str, names: tuple[str, ...], env: dict[str, str], workdir: Path
) -> Iterator[list[Variant]]:
    with contextlib.ExitStack() as stack:
        variants = []
        for name in names:
            port = free_port()
            prefix = service.upper()
            extra = {f"{prefix}_PORT": str(port), f"{prefix}_METRICS_PORT": str(free_port())}
            proc = stack.enter_context(
                process([sys.executable, LAUNCHER, service, name], env | extra, workdir / f"{service}-{name}.log")
            )
            variants.append(Variant(name, proc, f"http://127.0.0.1:{port}"))
        yield variants


async def bench_bookmarks(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    extra_env = {  # no rate limiting of one machine's load, no browser in the enrichment worker
        "GATEWAY_RATE_LIMIT_PER_MINUTE": "10000000",
        "GATEWAY_IP_RATE_LIMIT_PER_MINUTE": "10000000",
        "AUTH_ANONYMOUS_RATE_LIMIT_PER_MINUTE": "10000000",
        "ENRICHMENT_BROWSER": "off",
    }
    log = (workdir / "stack.log").open("w")  # noqa: SIM115 - lives as long as the stack
    config = StackConfig.for_tests(workdir / "stack", extra_env=extra_env, output=log)
    with Stack(config) as stack:
        users = await anonymous_users(stack.gateway_url, 64 + 1)
        await seed_delta(stack, users[-1][0], args.delta)
        headers = [h for _, h in users]
        env = {k: v for k, v in stack.child_env().items() if k != "PYTHONUNBUFFERED"}
        names = tuple(n for n in BOOKMARKS_VARIANTS if n in ("base", "control", *(args.variants or BOOKMARKS_VARIANTS)))
        with variant_processes("bookmarks", names, env, workdir) as variants:
            for v in variants:
                await wait_up(v.base + "/healthz")
            await measure_idle(variants)
            for r in range(args.rounds):
                if r:  # fresh users and tokens: a long run outlives an access token's 15 minutes
                    users = await anonymous_users(stack.gateway_url, 64 + 1)
                    await seed_delta(stack, users[-1][0], args.delta)
                    headers = [h for _, h in users]
                for v in variants[r % len(variants) :] + variants[: r % len(variants)]:
                    await bookmarks_round(v, r, headers, args)
                print(f"bookmarks round {r + 1}/{args.rounds} done", file=sys.stderr)
            return {v.name: v.samples for v in variants}


# ---------------------------------------------------------------- gateway


async def bench_gateway(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    private, jwks = keys()
    upstream_port = free_port()
    upstream = f"http://127.0.0.1:{upstream_port}"
    stub = [sys.executable, str(ROOT / "bench" / "proxy_cpu.py"), "--stub", str(upstream_port)]
    env = dict(os.environ) | {
        "AUTH_URL": upstream,
        "BOOKMARKS_URL": upstream,
        "ENRICHMENT_URL": upstream,
        "KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{free_port()}",  # nothing listens: tails back off
    }
    with (
        process(stub, {"BENCH_JWKS": jwks}, workdir / "stub.log"),
        variant_processes("gateway", GATEWAY_VARIANTS, env, workdir) as variants,
    ):
        await wait_up(upstream + "/v1/auth/jwks")
        for v in variants:
            await wait_up(v.base + "/healthz")
        await measure_idle(variants)
        per_worker = max(1, args.writes * 3 // CONCURRENCY)
        for r in range(args.rounds):
            for v in variants[r % len(variants) :] + variants[: r % len(variants)]:
                bearers = [{"Authorization": f"Bearer {token(private)}"} for _ in range(CONCURRENCY)]

                def put(http: httpx.AsyncClient, w: int, i: int, bearers: list[dict[str, str]] = bearers) -> Any:
                    body = {"url": f"https://example.com/{i}", "title": "t", "tags": ["a"]}
                    return http.put(f"/v1/bookmarks/{uuid.uuid4()}", json=body, headers=bearers[w])

                cpu, latencies = await closed_loop(v, CONCURRENCY, per_worker, put, 200)
                v.add("write_cpu_ms", cpu)
                v.add("write_p50_ms", statistics.median(latencies))
            print(f"gateway round {r + 1}/{args.rounds} done", file=sys.stderr)
        return {v.name: v.samples for v in variants}


# ---------------------------------------------------------------- report

# construct: (group, variant, figure, what the figure is)
CONSTRUCTS = [
    ("(control: base again)", "bookmarks", "control", "create_cpu_ms", "bookmarks CPU ms per create"),
    ("(control: base again)", "bookmarks", "control", "update_cpu_ms", "bookmarks CPU ms per update"),
    ("(control: base again)", "gateway", "control", "write_cpu_ms", "gateway CPU ms per write"),
    ("bookmarks write fast path", "bookmarks", "fast_path", "create_cpu_ms", "bookmarks CPU ms per create"),
    ("bookmarks write fast path", "bookmarks", "fast_path", "delete_cpu_ms", "bookmarks CPU ms per delete"),
    ("FIFO database gate", "bookmarks", "gate", "c64_create_p99_ms", "c64 create p99 ms"),
    ("FIFO database gate", "bookmarks", "gate", "create_cpu_ms", "bookmarks CPU ms per create"),
    ("QuietServer (bookmarks)", "bookmarks", "server", "idle_cpu_ms_per_s", "bookmarks idle CPU ms/s"),
    ("QuietServer (bookmarks)", "bookmarks", "server", "create_cpu_ms", "bookmarks CPU ms per create"),
    ("stored delta documents", "bookmarks", "stored_docs", "delta_page_p50_ms", "delta page (1,000) p50 ms"),
    ("gateway proxy fast path", "gateway", "proxy_fast_path", "write_cpu_ms", "gateway CPU ms per write"),
    ("gateway UpstreamPool", "gateway", "upstream", "write_cpu_ms", "gateway CPU ms per write"),
    ("QuietServer (gateway)", "gateway", "server", "idle_cpu_ms_per_s", "gateway idle CPU ms/s"),
    ("QuietServer (gateway)", "gateway", "server", "write_cpu_ms", "gateway CPU ms per write"),
]


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3g} ({min(values):.3g}–{max(values):.3g})"


def table(results: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for construct, group, variant, figure, label in CONSTRUCTS:
        if group not in results or variant not in results[group]:
            continue
        with_, without = results[group]["base"][figure], results[group][variant][figure]
        gain = (statistics.median(without) - statistics.median(with_)) / statistics.median(without)
        # The same, round by round (both measured within one round): less sensitive to a slow round.
        paired = statistics.median((b - a) / b for a, b in zip(with_, without, strict=True))
        rows.append(
            {
                "construct": construct,
                "figure": label,
                "with": spread(with_),
                "without": spread(without),
                "gain": f"{gain:+.0%}",
                "paired_gain": f"{paired:+.0%}",
            }  # fmt: skip
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--writes", type=int, default=480, help="requests per write phase and round")
    parser.add_argument("--delta", type=int, default=20_000, help="bookmarks in the delta sync")
    parser.add_argument("--workdir", help="keep the processes' logs here (default: a temporary directory)")
    parser.add_argument("--only", nargs="*", default=["bookmarks", "gateway"], choices=["bookmarks", "gateway"])
    parser.add_argument(
        "--variants", nargs="*", choices=BOOKMARKS_VARIANTS, help="only these bookmarks variants (and base, control)"
    )
    args = parser.parse_args()
    results: dict[str, Any] = {}
    out = ROOT / "bench" / "results" / "speed_code.json"
    out.parent.mkdir(exist_ok=True)
    workdir = contextlib.nullcontext(args.workdir) if args.workdir else tempfile.TemporaryDirectory(prefix="speed-")
    with workdir as tmp:
        for group, bench in (("gateway", bench_gateway), ("bookmarks", bench_bookmarks)):
            if group in args.only:
                results[group] = asyncio.run(bench(args, Path(tmp)))
                write(out, args, results)
    rows = write(out, args, results)
    for row in rows:
        print(
            f"{row['construct']:30} {row['figure']:28} with {row['with']:22} without {row['without']:22} "
            f"gain {row['gain']:>5} (paired {row['paired_gain']:>5})"
        )
    return 0


def write(out: Path, args: argparse.Namespace, results: dict[str, Any]) -> list[dict[str, Any]]:
    rows = table(results)
    when = datetime.now(UTC).isoformat(timespec="seconds")
    out.write_text(json.dumps({"when": when, "args": vars(args), "table": rows, "samples": results}, indent=2))
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
