"""Running the ``bookmarks`` CLI as a user would, for the full-stack tests."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

# When a test gives up on a CLI process that should have reached a state or exited: a hang, not speed.
DEADLINE_SECONDS = 60.0
_POLL_SECONDS = 0.02


def cli(profile: Path, server: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m bookmark_client --server SERVER --profile PROFILE ARGS…``; output captured, bounded in time."""
    return subprocess.run(
        [sys.executable, "-m", "bookmark_client", "--server", server, "--profile", str(profile), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


class Output:
    """The lines a process writes to a pipe, read by a thread so the test can wait with a deadline."""

    def __init__(self, pipe: Iterable[str] | None) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe: Iterable[str] | None) -> None:
        for line in pipe or ():
            self.lines.append(line.rstrip("\n"))

    def has(self, prefix: str) -> bool:
        return any(line.startswith(prefix) for line in self.lines)

    def text(self) -> str:
        self._thread.join(timeout=DEADLINE_SECONDS)
        return "\n".join(self.lines)


def until(condition: Callable[[], bool], what: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not condition():
        if process.poll() is not None:
            raise AssertionError(f"watch exited ({process.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"watch did not get to {what} within {DEADLINE_SECONDS} s")
        time.sleep(_POLL_SECONDS)
