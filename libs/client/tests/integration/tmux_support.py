"""The ``bookmarks`` CLI in a real terminal: a private tmux server, one session per command.

A command runs in a pane of the given size; when it ends the pane signals a tmux channel (``wait-for``), so
the test waits for the command itself, never for a clock. The screen is then read with ``capture-pane``.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from itertools import count
from pathlib import Path

import pytest

TIMEOUT = 300


class Tmux:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.socket = directory / "tmux.sock"  # short: a socket path is limited to about 100 bytes
        self._names = count()

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", str(self.socket), *args], capture_output=True, text=True, timeout=TIMEOUT)
        if done.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args[:3])}… failed: {done.stderr.strip()}")
        return done.stdout

    @contextmanager
    def session(self, shell_command: str, *, width: int, height: int = 50) -> Iterator[str]:
        """Run ``shell_command`` in a new pane of ``width`` x ``height`` cells; yields once it has ended."""
        name = f"s{next(self._names)}"
        signal = f"{name}-done"
        script = f"{shell_command}; tmux -S {shlex.quote(str(self.socket))} wait-for -S {signal}; exec sleep {TIMEOUT}"
        self.tmux("new-session", "-d", "-s", name, "-x", str(width), "-y", str(height), "sh", "-c", script)
        try:
            self.tmux("wait-for", signal)
            yield name
        finally:
            self.tmux("kill-session", "-t", name)

    def screen(self, shell_command: str, *, width: int, height: int = 50, escapes: bool = False) -> list[str]:
        """The pane's lines after ``shell_command`` ended (with ``escapes``: its colours as SGR sequences)."""
        with self.session(shell_command, width=width, height=height) as name:
            flags = ["-e"] if escapes else []
            text = self.tmux("capture-pane", "-p", *flags, "-t", name)
        lines = text.rstrip("\n").split("\n")
        while lines and not lines[-1].strip():
            lines.pop()
        return lines

    def cells(self, text: str) -> int:
        """How many cells this terminal gives ``text``: where its cursor stands after printing it."""
        source = self.directory / "measure.txt"
        source.write_text(text, encoding="utf-8")
        with self.session(f"cat {shlex.quote(str(source))}", width=1000, height=3) as name:
            return int(self.tmux("display-message", "-p", "-t", name, "#{cursor_x}"))


@contextmanager
def tmux_server() -> Iterator[Tmux]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux)")
    directory = Path(tempfile.mkdtemp(prefix="tmx", dir="/tmp"))
    tmux = Tmux(directory)
    # A session that lives as long as the server: tmux exits with its last session, and a command started
    # while it is exiting would fail.
    tmux.tmux("new-session", "-d", "-s", "keep", "-x", "80", "-y", "24", "sleep", str(TIMEOUT * 10))
    try:
        yield tmux
    finally:
        subprocess.run(["tmux", "-S", str(tmux.socket), "kill-server"], capture_output=True, timeout=TIMEOUT)
        shutil.rmtree(directory, ignore_errors=True)


def cli_command(profile: Path, server: str, *args: str, env: Mapping[str, str | None] | None = None) -> str:
    """The shell command running ``bookmarks`` with exactly these environment changes (None unsets)."""
    changes = ["-u", "COLUMNS", "-u", "LINES", "-u", "NO_COLOR", "-u", "FORCE_COLOR"]
    for key, value in (env or {}).items():
        changes += ["-u", key] if value is None else [f"{key}={value}"]
    argv = [sys.executable, "-m", "bookmark_client", "--server", server, "--profile", str(profile), *args]
    return shlex.join(["env", *changes, *argv])
