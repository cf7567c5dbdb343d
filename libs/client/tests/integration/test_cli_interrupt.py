"""Ctrl-C ends ``bookmarks watch`` whatever it is doing, with watch's exit status for it (0, "stopped").

The CLI runs as a process against the loopback server (loopback_server.py). Each case brings it to
one state, waits until the server or the output shows it is there, sends SIGINT and gives the process
a deadline to exit: the point at which the test gives up on a hung process, not a measure of speed.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_support import DEADLINE_SECONDS, Output, until
from loopback_server import Loopback


@dataclass(frozen=True)
class Moment:
    """Where watch is when Ctrl-C comes: ``arrange`` sets the server up after sign-in, ``reached`` says
    watch is there (None: send at once)."""

    arrange: Callable[[Loopback], None]
    reached: Callable[[Loopback, Output], bool] | None
    ignoring_sigint: bool = False


def _nothing(_: Loopback) -> None:
    return None


def _expire_tokens_and_hold_refresh(server: Loopback) -> None:
    server.fake.expire_all_access_tokens()
    server.refresh.enabled.set()


MOMENTS = {
    "right-after-start": Moment(_nothing, None),
    "renewing-the-session": Moment(_expire_tokens_and_hold_refresh, lambda s, _: s.refresh.reached.is_set()),
    "connecting": Moment(lambda s: s.handshake.enabled.set(), lambda s, _: s.handshake.reached.is_set()),
    "syncing": Moment(lambda s: s.delta.enabled.set(), lambda s, _: s.delta.reached.is_set()),
    "waiting-for-changes": Moment(_nothing, lambda s, out: out.has("connected") and s.deltas_served > 0),
    "backing-off-between-connections": Moment(
        lambda s: s.drop_sockets.set(), lambda s, _: s.sockets_closed_by_server >= 2
    ),
    # As a shell without job control starts `bookmarks watch &`: SIGINT ignored, inherited across exec.
    "started-with-sigint-ignored": Moment(_nothing, lambda _, out: out.has("connected"), ignoring_sigint=True),
}


@pytest.fixture(autouse=True)
def sigint_not_ignored() -> Iterator[None]:
    """Start watch as a terminal does, with SIGINT's default action, also when the test runner itself was
    started ignoring SIGINT: a child inherits an ignored signal, while a handled one is reset at exec."""
    if signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.fixture
def signed_in(tmp_path: Path) -> Iterator[tuple[Loopback, Path]]:
    profile = tmp_path / "watcher.sqlite"
    with Loopback().running() as server:
        login = subprocess.run(
            [*_cli(server, profile), "login", "--anonymous"], capture_output=True, text=True, timeout=DEADLINE_SECONDS
        )
        assert login.returncode == 0, login.stderr
        server.deltas_served = 0
        yield server, profile


def _cli(server: Loopback, profile: Path) -> list[str]:
    return [sys.executable, "-m", "bookmark_client", "--server", server.url, "--profile", str(profile)]


def _start_watch(command: list[str], *, ignoring_sigint: bool) -> subprocess.Popen[str]:
    if ignoring_sigint:
        command = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *command]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("moment", list(MOMENTS.values()), ids=list(MOMENTS))
def test_ctrl_c_stops_watch_at_any_moment(signed_in: tuple[Loopback, Path], moment: Moment) -> None:
    server, profile = signed_in
    moment.arrange(server)
    watch = _start_watch([*_cli(server, profile), "watch"], ignoring_sigint=moment.ignoring_sigint)
    try:
        out, err = Output(watch.stdout), Output(watch.stderr)
        if moment.reached is not None:
            reached = moment.reached
            until(lambda: reached(server, out), "the moment under test", watch)
        watch.send_signal(signal.SIGINT)
        status = watch.wait(timeout=DEADLINE_SECONDS)
        stdout, stderr = out.text(), err.text()
        if moment.reached is None and not out.has("watching"):
            # Interrupted before the command began: the interpreter's own end for an interrupt (killed by
            # SIGINT while it starts, KeyboardInterrupt while it imports the CLI); the CLI cannot act yet.
            assert status in (0, -signal.SIGINT) or "KeyboardInterrupt" in stderr, (status, stderr)
            return
        assert (status, out.lines[-1:]) == (0, ["stopped"]), (stdout, stderr)
        assert "Traceback" not in stderr, stderr
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
