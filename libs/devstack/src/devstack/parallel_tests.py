"""Run groups of test directories as concurrent pytest processes (``make test-integration``).

Integration tests spend most of their time waiting (on the broker's fetch waits, on a service to start,
on a poll's deadline): one pytest process keeps about one of two cores busy. Two groups side by side
use both. Each group is its own pytest process with its own session fixtures (one ``infra`` each; the
tests that need the whole platform share one group, so one full stack runs at a time).

Each group's output goes to a file and is printed whole when the group ends, with its time, so the
groups' lines never interleave. The exit status is the first failing group's (pytest's 5, "nothing
collected", counts as success, as for every other suite).

    python -m devstack.parallel_tests --group "dir dir" --group "dir" -- [pytest options]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

NOTHING_COLLECTED = 5


@dataclass
class Group:
    dirs: list[str]
    process: subprocess.Popen[bytes]
    output: Path
    started: float


def start(dirs: list[str], pytest_args: Sequence[str], out_dir: Path, index: int) -> Group:
    output = out_dir / f"group-{index}.log"
    with output.open("wb") as sink:
        process = subprocess.Popen(  # noqa: S603 - our own test runner
            [sys.executable, "-m", "pytest", *pytest_args, *dirs], stdout=sink, stderr=subprocess.STDOUT
        )
    return Group(dirs=dirs, process=process, output=output, started=time.monotonic())


def report(group: Group, code: int) -> None:
    sys.stdout.write(group.output.read_text(encoding="utf-8", errors="replace"))
    took = time.monotonic() - group.started
    print(f"parallel_tests: {' '.join(group.dirs)}: exit {code} after {took:.0f} s", flush=True)


def run(groups: list[list[str]], pytest_args: Sequence[str]) -> int:
    """Start every non-empty group, print each as it ends, return the first failing exit status."""
    with tempfile.TemporaryDirectory(prefix="parallel-tests-") as tmp:
        running = [start(dirs, pytest_args, Path(tmp), i) for i, dirs in enumerate(groups) if dirs]
        failed = 0
        while running:
            for group in list(running):
                code = group.process.poll()
                if code is None:
                    continue
                running.remove(group)
                report(group, code)
                if code not in (0, NOTHING_COLLECTED) and not failed:
                    failed = code
            time.sleep(0.5)
    return failed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack.parallel_tests")
    parser.add_argument("--group", action="append", default=[], help="space-separated test directories")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="after --: options for every pytest")
    args = parser.parse_args(argv)
    pytest_args = [a for a in args.pytest_args if a != "--"]
    return run([g.split() for g in args.group], pytest_args)


if __name__ == "__main__":
    sys.exit(main())
