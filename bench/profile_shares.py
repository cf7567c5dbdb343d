"""Shares of a py-spy raw profile (``py-spy record --format raw``): where a process's busy samples go.

    .venv/bin/python bench/profile_shares.py FILE [FILE ...] [--top 30] [--idle FUNCTION ...]

For each function (name and file), the share of busy samples whose stack holds it (inclusive) and the
share where it is the innermost frame (self). Samples whose innermost frame is the event loop waiting
(``select``/``poll``/``epoll`` by default, ``--idle`` for more) are idle and left out of both. Several
files (e.g. the rounds of ``bench/wrk_writes.py --profile``) are summed.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from pathlib import Path

IDLE = ("select", "poll", "epoll", "_run_once")
_FRAME = re.compile(r"^(?P<name>.*?) \((?P<file>[^():]*?)(?::\d+)?\)$")


def frame_key(frame: str) -> str:
    match = _FRAME.match(frame.strip())
    if match is None:
        return frame.strip()
    return f"{match['name']} ({Path(match['file']).name})"


def shares(paths: list[Path], idle: tuple[str, ...]) -> tuple[int, collections.Counter[str], collections.Counter[str]]:
    inclusive: collections.Counter[str] = collections.Counter()
    innermost: collections.Counter[str] = collections.Counter()
    busy = 0
    for path in paths:
        for line in path.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                continue
            frames = [frame_key(f) for f in stack.split(";")]
            if frames[-1].split(" (")[0].rsplit(".", 1)[-1] in idle:
                continue
            busy += int(count)
            for key in set(frames):
                inclusive[key] += int(count)
            innermost[frames[-1]] += int(count)
    return busy, inclusive, innermost


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--idle", nargs="*", default=[], help="more innermost functions that mean waiting")
    args = parser.parse_args()
    busy, inclusive, innermost = shares(args.files, IDLE + tuple(args.idle))
    print(f"{busy} busy samples")
    print(f"{'inclusive':>9}  {'self':>6}  function")
    for key, count in inclusive.most_common(args.top):
        print(f"{count / busy:>9.1%}  {innermost[key] / busy:>6.1%}  {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
