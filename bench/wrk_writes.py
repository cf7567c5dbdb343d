"""CPU per write of the whole stack under ``wrk``: bookmark creates at c16 against ``make run``'s defaults.

    .venv/bin/python bench/wrk_writes.py [--rounds 3] [--seconds 20] [--connections 16] [--profile DIR]

Needs ``wrk`` (Debian package ``wrk``). Starts its own stack (``bench/run.py``'s ``bench_stack``: private
ports and data, durable PostgreSQL, INFO logs, access lines and tracing as shipped), makes one anonymous
user per connection and runs ``wrk`` with as many threads as connections, each thread one connection and
one user, each request a ``PUT /v1/bookmarks/{new id}`` (a create). Per round: a 3 s warm-up, then
``--seconds`` of load; CPU seconds of every process of the stack (PostgreSQL's backends included, ``wrk``
apart) from the start of the timed load until 1.5 s after it (the writes' events reach their consumers),
divided by the creates ``wrk`` completed. Latency percentiles are ``wrk``'s own.

``--profile DIR``: py-spy (``--py-spy PATH``) samples every service process at 200 Hz during the timed
load of each round and writes raw stacks to ``DIR/<round>-<service>.txt`` (``bench/profile_shares.py``
sums them). Prints a table and writes ``bench/results/wrk-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from result_files import write_results  # bench/ is on sys.path when this script runs
from run import Api, bench_stack, cpu_ms_per_op, python_loop_cpu_s, stack_cpu_seconds

WARM_UP_SECONDS = 3
SETTLE_SECONDS = 1.5

# One user per wrk thread (one connection each); every request creates a bookmark of a new id.
SCRIPT = """
local tokens = {%(tokens)s}
local next_thread = 1
function setup(thread)
  thread:set("token", tokens[next_thread])
  thread:set("name", "%(tag)s-" .. next_thread)
  next_thread = next_thread + 1
end
local n = 0
function request()
  n = n + 1
  local id = name .. "-" .. n
  local body = string.format(
    '{"url":"https://site%%d.example/article/%%s","title":"Bookmark %%d",' ..
    '"notes":"benchmark","collectionIds":["inbox"]}', n %% 50, id, n)
  return wrk.format("PUT", "/v1/bookmarks/" .. id,
    {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"}, body)
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK {"requests":%%d,"duration_us":%%d,"errors":%%d,"p50_us":%%d,"p90_us":%%d,"p99_us":%%d,"max_us":%%d}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
"""


def run_wrk(url: str, script: Path, connections: int, seconds: float) -> dict[str, Any]:
    command = ["wrk", f"-t{connections}", f"-c{connections}", f"-d{seconds:.0f}s", "--latency", "-s", str(script), url]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    line = next(line for line in out.splitlines() if line.startswith("WRK "))
    return dict(json.loads(line[4:]))


def start_profiles(directory: Path | None, py_spy: str, label: str, seconds: float) -> list[subprocess.Popen[bytes]]:
    if directory is None:
        return []
    import psutil

    profilers = []
    for proc in psutil.Process().children(recursive=True):
        cmd = proc.cmdline()
        if "-m" in cmd and "devstack" not in " ".join(cmd):
            service = cmd[cmd.index("-m") + 1]
            out = directory / f"{label}-{service}.txt"
            args = [py_spy, "record", "--pid", str(proc.pid), "--rate", "200", "--format", "raw", "--nonblocking"]
            profilers.append(subprocess.Popen([*args, "--duration", f"{seconds:.0f}", "-o", str(out)],
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))  # fmt: skip
    return profilers


async def make_users(gateway_url: str, count: int) -> list[str]:
    api = Api(gateway_url)
    try:
        return [(await api.new_user())[1]["Authorization"].split(" ", 1)[1] for _ in range(count)]
    finally:
        await api.http.aclose()


def one_round(url: str, tokens: list[str], args: argparse.Namespace, label: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-wrk-") as tmp:

        def script(tag: str) -> Path:
            path = Path(tmp) / f"{tag}.lua"
            path.write_text(SCRIPT % {"tokens": ", ".join(f'"{t}"' for t in tokens), "tag": f"{label}{tag}"})
            return path

        run_wrk(url, script("warm"), args.connections, WARM_UP_SECONDS)
        profilers = start_profiles(args.profile, args.py_spy, label, args.seconds)
        before = stack_cpu_seconds()
        result = run_wrk(url, script("timed"), args.connections, args.seconds)
        time.sleep(SETTLE_SECONDS)
        after = stack_cpu_seconds()
        for profiler in profilers:
            profiler.wait()
    writes = result["requests"] - result["errors"]
    return {
        "writes": writes,
        "errors": result["errors"],
        "writes_per_s": round(writes / (result["duration_us"] / 1e6), 1),
        "p50_ms": round(result["p50_us"] / 1000, 1),
        "p99_ms": round(result["p99_us"] / 1000, 1),
        "max_ms": round(result["max_us"] / 1000, 1),
        **cpu_ms_per_op(before, after, writes),
    }


def print_table(report: dict[str, Any]) -> None:
    print(f"\nwrk, c{report['connections']} creates, {report['seconds']:.0f} s a round; machine loop "
          f"{report['machine']['python_loop_cpu_s']} s")  # fmt: skip
    parts = sorted({p for r in report["rounds"] for p in r["cpu_ms_per_op"]})
    print(f"{'round':<8}{'CPU ms/write':>13}{'writes/s':>10}{'p50 ms':>8}{'p99 ms':>8}  " + "  ".join(parts))
    for i, r in enumerate(report["rounds"], 1):
        by = "  ".join(f"{r['cpu_ms_per_op'].get(p, 0):>{len(p)}.2f}" for p in parts)
        head = f"{i:<8}{r['cpu_ms_per_op_total']:>13.2f}{r['writes_per_s']:>10.1f}"
        print(f"{head}{r['p50_ms']:>8.1f}{r['p99_ms']:>8.1f}  {by}")
    m = report["median"]
    print(f"{'median':<8}{m['cpu_ms_per_write']:>13.2f}{m['writes_per_s']:>10.1f}{'':>8}{m['p99_ms']:>8.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--profile", type=Path, help="py-spy every service process into this directory")
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    loop_before = python_loop_cpu_s()
    with bench_stack() as stack:
        tokens = asyncio.run(make_users(stack.gateway_url, args.connections))
        rounds = []
        for r in range(args.rounds):
            rounds.append(one_round(stack.gateway_url, tokens, args, f"r{r + 1}"))
            print(f"bench: round {r + 1}: {json.dumps(rounds[-1])}", flush=True)
    report = {
        "at": datetime.now(UTC).isoformat(),
        "connections": args.connections,
        "seconds": args.seconds,
        "machine": {"python_loop_cpu_s": max(loop_before, python_loop_cpu_s())},
        "rounds": rounds,
        "median": {
            "cpu_ms_per_write": statistics.median(r["cpu_ms_per_op_total"] for r in rounds),
            "writes_per_s": statistics.median(r["writes_per_s"] for r in rounds),
            "p99_ms": statistics.median(r["p99_ms"] for r in rounds),
        },
    }
    path = write_results("wrk", report)
    print_table(report)
    print(f"\nresults written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
