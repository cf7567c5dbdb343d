"""Header-flood benchmark: latency of a normal request through the gateway, quiet and
while a bounded flood of hostile-header requests hits the same gateway on loopback.

    .venv/bin/python bench/header_flood.py [--base-url URL] [--samples 400] [--attackers 8] [--rate 100]

Without ``--base-url`` it starts its own stack (private data dir, free ports). Also run by
``make bench`` (``bench/run.py``, step ``header_flood``). The flood runs in a separate process (so its
own work does not delay the measuring loop): ``--attackers`` connections at a time, at most ``--rate``
hostile requests per second in total, alternating two requests on fresh connections: 12,000 small
headers, and one header of 16 MiB sent in 64 KiB writes (stopped when the gateway answers). The normal
request is ``GET /v1/auth/jwks``, a forwarded route that needs no token, sent one at a time on a
kept-alive connection. Prints a table and writes ``bench/results/header-flood-<timestamp>.json`` and
``bench/results/header-flood-latest.json``. The target is p99 under flood within 2x of quiet.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from result_files import write_results as write_results_file  # bench/ is on sys.path when this script runs

NORMAL_PATH = "/v1/auth/jwks"
MANY_HEADERS = 12_000
BIG_HEADER_BYTES = 16 * 1024 * 1024
CHUNK = 64 * 1024


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))] if ordered else float("nan")


def many_headers_request() -> bytes:
    lines = [f"GET {NORMAL_PATH} HTTP/1.1", "Host: bench", *(f"x-f{i}: a" for i in range(MANY_HEADERS))]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def _status_of(reader: asyncio.StreamReader) -> str:
    line = await reader.readline()
    parts = line.split()
    return parts[1].decode() if len(parts) > 1 else "closed"


async def send_many_headers(host: str, port: int, request: bytes) -> str:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(request)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        return await _status_of(reader)
    except ConnectionError:
        return "reset"
    finally:
        writer.close()


async def send_big_header(host: str, port: int) -> str:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(f"GET {NORMAL_PATH} HTTP/1.1\r\nHost: bench\r\nX-Big: ".encode())
        answer = asyncio.ensure_future(_status_of(reader))
        chunk = b"x" * CHUNK
        for _ in range(BIG_HEADER_BYTES // CHUNK):
            if answer.done():
                break
            writer.write(chunk)
            try:
                await writer.drain()
            except ConnectionError:
                break
        return await answer
    except ConnectionError:
        return "reset"
    finally:
        writer.close()


async def attacker(host: str, port: int, interval: float, stop: Any, outcomes: Counter[str]) -> None:
    request = many_headers_request()
    turn = 0
    loop = asyncio.get_running_loop()
    next_at = loop.time()
    while not stop.is_set():
        kind = "many-headers" if turn % 2 == 0 else "16MiB-header"
        try:
            status = await (send_many_headers(host, port, request) if turn % 2 == 0 else send_big_header(host, port))
        except OSError as exc:
            status = type(exc).__name__
        outcomes[f"{kind} {status}"] += 1
        turn += 1
        next_at += interval
        await asyncio.sleep(max(0.0, next_at - loop.time()))


def flood_process(host: str, port: int, attackers: int, rate: float, stop: Any, results: Any) -> None:
    """The flood, in its own process: attackers until ``stop`` is set; the outcome counts go to ``results``."""

    async def flood() -> Counter[str]:
        outcomes: Counter[str] = Counter()
        await asyncio.gather(*(attacker(host, port, attackers / rate, stop, outcomes) for _ in range(attackers)))
        return outcomes

    results.put(dict(asyncio.run(flood())))


async def normal_latencies(http: httpx.AsyncClient, samples: int) -> list[float]:
    out: list[float] = []
    for _ in range(samples):
        started = time.perf_counter()
        response = await http.get(NORMAL_PATH)
        out.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(f"normal request answered {response.status_code}: {response.text[:200]}")
    return out


def summary(latencies: list[float]) -> dict[str, float]:
    return {
        "samples": len(latencies),
        "p50_ms": round(pct(latencies, 50) * 1000, 2),
        "p99_ms": round(pct(latencies, 99) * 1000, 2),
    }


def cpu_seconds(pid: int | None) -> float:
    """CPU time used so far by process ``pid`` (0 when unknown): how busy the gateway really was."""
    if pid is None:
        return 0.0
    import psutil

    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


async def bench_header_flood(
    gateway_url: str, *, samples: int = 400, attackers: int = 8, rate: float = 100.0, gateway_pid: int | None = None
) -> dict[str, Any]:
    """Quiet figures, then the same requests during a flood; the ratio of the p99s."""
    host, port = httpx.URL(gateway_url).host, httpx.URL(gateway_url).port or 80
    context = multiprocessing.get_context("spawn")
    stop, results = context.Event(), context.Queue()
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60, trust_env=False) as http:
        await normal_latencies(http, 20)  # warm-up: connections, caches
        cpu_before, quiet_started = cpu_seconds(gateway_pid), time.perf_counter()
        quiet = await normal_latencies(http, samples)
        quiet_cpu = (cpu_seconds(gateway_pid) - cpu_before) / (time.perf_counter() - quiet_started)
        flood = context.Process(target=flood_process, args=(host, port, attackers, rate, stop, results))
        flood.start()
        try:
            await asyncio.sleep(2.0)  # the process starts and the flood reaches full strength
            cpu_before, started = cpu_seconds(gateway_pid), time.perf_counter()
            loaded = await normal_latencies(http, samples)
            elapsed = time.perf_counter() - started
            flood_cpu = (cpu_seconds(gateway_pid) - cpu_before) / elapsed
        finally:
            stop.set()
        outcomes: dict[str, int] = await asyncio.to_thread(results.get, True, 60)
        await asyncio.to_thread(flood.join, 30)
    quiet_s, loaded_s = summary(quiet), summary(loaded)
    return {
        "normal_request": f"GET {NORMAL_PATH}",
        "attackers": attackers,
        "rate_limit_per_second": rate,
        "quiet": quiet_s,
        "flood": loaded_s,
        "p99_ratio": round(loaded_s["p99_ms"] / quiet_s["p99_ms"], 2) if quiet_s["p99_ms"] else None,
        "p50_ratio": round(loaded_s["p50_ms"] / quiet_s["p50_ms"], 2) if quiet_s["p50_ms"] else None,
        "hostile_requests": sum(outcomes.values()),
        "hostile_requests_per_second": round(sum(outcomes.values()) / (elapsed + 2.0), 1),
        "hostile_outcomes": dict(sorted(outcomes.items())),
        # Share of one core the gateway process used in each phase (null when its pid is unknown).
        "gateway_cpu_quiet": round(quiet_cpu, 3) if gateway_pid else None,
        "gateway_cpu_flood": round(flood_cpu, 3) if gateway_pid else None,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def print_table(result: dict[str, Any]) -> None:
    print(
        f"\nheader flood: {result['attackers']} attackers, at most {result['rate_limit_per_second']}/s; "
        f"normal request {result['normal_request']}"
    )
    print(f"{'':8} {'samples':>8} {'p50 ms':>8} {'p99 ms':>8}")
    for name in ("quiet", "flood"):
        row = result[name]
        print(f"{name:8} {row['samples']:>8} {row['p50_ms']:>8} {row['p99_ms']:>8}")
    print(f"p99 flood/quiet: {result['p99_ratio']}x (target <= 2x); p50: {result['p50_ratio']}x")
    print(f"hostile requests: {result['hostile_requests']} ({result['hostile_requests_per_second']}/s)")
    for outcome, count in result["hostile_outcomes"].items():
        print(f"  {outcome}: {count}")
    print(
        f"gateway CPU (share of one core): quiet {result['gateway_cpu_quiet']}, flood {result['gateway_cpu_flood']}; "
        f"machine load average {result['load_average_1m']} on {os.cpu_count()} CPUs"
    )


def write_results(result: dict[str, Any]) -> Path:
    document = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "header_flood": result,
    }
    return write_results_file("header-flood", document, latest=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", help="a running gateway (default: start a private stack)")
    parser.add_argument("--samples", type=int, default=400, help="normal requests per phase")
    parser.add_argument("--attackers", type=int, default=8, help="concurrent hostile connections")
    parser.add_argument("--rate", type=float, default=100.0, help="hostile requests per second, at most")
    args = parser.parse_args()
    if args.base_url:
        result = asyncio.run(
            bench_header_flood(args.base_url, samples=args.samples, attackers=args.attackers, rate=args.rate)
        )
    else:
        from devstack.stack import Stack, StackConfig

        with tempfile.TemporaryDirectory(prefix="bench-flood-") as data_dir:
            config = StackConfig.for_tests(
                Path(data_dir),
                extra_env={"GATEWAY_IP_RATE_LIMIT_PER_MINUTE": "10000000", "LOG_LEVEL": "WARNING"},
                output=open(Path(data_dir) / "stack.log", "w"),  # noqa: SIM115 - lives as long as the stack
            )
            print("bench: starting the stack …", flush=True)
            with Stack(config) as stack:
                pid = stack.service_processes["gateway"].pid
                result = asyncio.run(
                    bench_header_flood(
                        stack.gateway_url,
                        samples=args.samples,
                        attackers=args.attackers,
                        rate=args.rate,
                        gateway_pid=pid,
                    )
                )
    print_table(result)
    print(f"\nresults written to {write_results(result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
