"""CPU per access line: the JSON handler on stderr, one write per line against coalesced writes.

    .venv/bin/python bench/log_lines.py [--lines 20000] [--rounds 5] [--per-tick 8]

Logs ``--lines`` access lines (the middleware's message and fields, formatted by ``JsonFormatter``) into
a pipe that a child process drains, as a service's stderr is drained by its supervisor, from inside a
running event loop: ``--per-tick`` lines, then one loop iteration (``asyncio.sleep(0)``), as requests
finish between a server's reads. Both ways per round, their order alternating; reports the process's
CPU per line (user + system) and the number of ``write`` calls. Prints a table and writes
``bench/results/log-lines-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import logging
import os
import statistics
import subprocess
import sys
import time
from typing import Any, TextIO

from result_files import write_results  # bench/ is on sys.path when this script runs

from common.logging import CoalescingStreamHandler, JsonFormatter

FIELDS = {"method": "PUT", "path": "/v1/bookmarks/bench-1-123", "route": "/v1/bookmarks/{clientBookmarkId}",
          "status": 200, "duration_ms": 12.34, "user_id": "5b0c1f0e-6a3e-4c55-9d8e-2f2b9b0f6a11"}  # fmt: skip


# The reader: drains its stdin like a supervisor reading a service's stderr, then prints its CPU seconds.
DRAIN = """import os, sys
t = os.times()
while sys.stdin.buffer.read(65536):
    pass
e = os.times()
print(e.user - t.user + e.system - t.system)
"""


class CountingPipe(io.TextIOWrapper):
    writes = 0

    def write(self, text: str) -> int:
        CountingPipe.writes += 1
        return super().write(text)


def handler_for(way: str, stream: TextIO) -> logging.Handler:
    handler = logging.StreamHandler(stream) if way == "per line" else CoalescingStreamHandler(stream)
    handler.setFormatter(JsonFormatter("bench"))
    return handler


async def log_lines(logger: logging.Logger, lines: int, per_tick: int) -> None:
    for n in range(lines):
        logger.info("request", extra=FIELDS)
        if n % per_tick == per_tick - 1:
            await asyncio.sleep(0)
    await asyncio.sleep(0.1)  # the last batch's timer


def one(way: str, lines: int, per_tick: int) -> dict[str, Any]:
    drain = subprocess.Popen([sys.executable, "-c", DRAIN], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert drain.stdin is not None
    stream = CountingPipe(drain.stdin, encoding="utf-8", line_buffering=True)
    CountingPipe.writes = 0
    logger = logging.getLogger(f"bench.{way}")
    logger.handlers[:] = [handler_for(way, stream)]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    started = os.times()
    wall = time.perf_counter()
    asyncio.run(log_lines(logger, lines, per_tick))
    ended = os.times()
    elapsed = time.perf_counter() - wall
    stream.close()
    assert drain.stdout is not None
    reader = float(drain.stdout.read())
    drain.wait()
    cpu = (ended.user - started.user) + (ended.system - started.system)
    return {"way": way, "cpu_us_per_line": round(cpu / lines * 1e6, 2), "writes": CountingPipe.writes,
            "reader_cpu_us_per_line": round(reader / lines * 1e6, 2), "wall_s": round(elapsed, 3)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--per-tick", type=int, default=8)
    args = parser.parse_args()
    ways = ["per line", "coalesced"]
    rounds = []
    for r in range(args.rounds):
        for way in ways if r % 2 == 0 else ways[::-1]:
            rounds.append(one(way, args.lines, args.per_tick) | {"round": r + 1})
    print(f"\n{args.lines} access lines a round, {args.per_tick} per loop iteration, {args.rounds} rounds")
    print(f"{'way':<12}{'writer CPU µs/line (rounds)':<40}{'median':>8}{'reader median':>15}{'writes':>9}")
    summary = {}
    for way in ways:
        mine = [r for r in rounds if r["way"] == way]
        values = [r["cpu_us_per_line"] for r in mine]
        reader = statistics.median(r["reader_cpu_us_per_line"] for r in mine)
        summary[way] = {"writer": statistics.median(values), "reader": reader}
        shown = ", ".join(f"{v:.1f}" for v in values)
        print(f"{way:<12}{shown:<40}{summary[way]['writer']:>8.1f}{reader:>15.1f}{mine[0]['writes']:>9}")
    path = write_results("log-lines", {"lines": args.lines, "per_tick": args.per_tick, "rounds": rounds,
                                       "median_cpu_us_per_line": summary})  # fmt: skip
    print(f"\nresults written to {path}")


if __name__ == "__main__":
    main()
