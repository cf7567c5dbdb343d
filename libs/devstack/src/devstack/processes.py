"""Supervision of the stack's child processes.

Every child:

* runs in its own process group, so a Ctrl-C typed in the terminal reaches only the launcher, which then
  stops the children in order instead of all of them dying at once mid-request;
* has stdout and stderr merged and copied line by line to the launcher's stdout, prefixed with its
  name (``[auth]              ...``), to ``<log_dir>/<name>.log`` when a log directory is given, and
  into a ring buffer whose tail is quoted in start-up errors;
* gets a parent-death signal (Linux ``PR_SET_PDEATHSIG``), so a launcher killed with SIGKILL does not
  leave services, brokers or databases running behind it.

The parent-death signal fires when the *thread* that spawned the child exits, not only the process:
spawn from the main thread (or another thread that lives as long as the children).

Stopping sends each child its stop signal, waits up to a deadline (10 s by default), then SIGKILLs the
process group and every descendant seen before the stop began, so nothing is left orphaned.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TextIO

import psutil

__all__ = ["ChildProcess", "Supervisor"]

_PR_SET_PDEATHSIG = 1
DEFAULT_NAME_WIDTH = len("enrichment-worker")


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        # Resolved once in the parent: loading a library between fork and exec could deadlock on the
        # dynamic loader's lock if another thread held it at fork time.
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


_PRCTL = _load_prctl()


def _death_signal_preexec(death_signal: signal.Signals) -> Callable[[], None] | None:
    if _PRCTL is None:
        return None
    prctl = _PRCTL
    launcher_pid = os.getpid()

    def preexec() -> None:
        # Runs in the child after any uid/gid switch: the kernel clears the setting on credential
        # changes, so it must be set after them to survive into a child that runs as another user.
        prctl(_PR_SET_PDEATHSIG, int(death_signal), 0, 0, 0)
        if os.getppid() != launcher_pid:
            # The launcher died between fork and prctl, so the signal will never be delivered.
            os.kill(os.getpid(), death_signal)

    return preexec


def _peek_exit(pid: int) -> int | None:
    """Exit status of ``pid`` if it has exited, without reaping it.

    Leaving the zombie in place keeps its pid, and so its process-group id, reserved until we are done
    signalling the group: a reaped leader's group id could in principle be recycled for strangers.
    """
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return None
    if info is None:
        return None
    if info.si_code == os.CLD_EXITED:
        return info.si_status
    return -info.si_status


class ChildProcess:
    """One supervised child: its process, the thread pumping its output, and its last output lines."""

    def __init__(
        self,
        name: str,
        popen: subprocess.Popen[bytes],
        *,
        stop_signal: signal.Signals,
        emit: Callable[[str, str], None],
        log_path: Path | None,
        tail_size: int,
    ) -> None:
        self.name = name
        self.popen = popen
        self.stop_signal = stop_signal
        self._emit = emit
        self._log_path = log_path
        self._tail: deque[str] = deque(maxlen=tail_size)
        self._reader = threading.Thread(target=self._pump, name=f"devstack-output-{name}", daemon=True)
        self._reader.start()

    def __repr__(self) -> str:
        return f"<ChildProcess {self.name} pid={self.pid} returncode={self.returncode}>"

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        """Exit code (negative: killed by that signal), or None while running."""
        if self.popen.returncode is not None:
            return self.popen.returncode
        return _peek_exit(self.pid)

    def is_running(self) -> bool:
        return self.returncode is None

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait until the child exits (without reaping it) and its output is drained; None on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.returncode) is None:
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(0.05)
        self.join_output(2.0)
        return code

    def tail(self, lines: int = 40) -> list[str]:
        """The last ``lines`` lines the child wrote."""
        buffered = list(self._tail)
        return buffered[-lines:] if lines else []

    def join_output(self, timeout: float) -> None:
        self._reader.join(timeout)

    def _pump(self) -> None:
        stream = self.popen.stdout
        assert stream is not None
        log = self._log_path.open("w", encoding="utf-8") if self._log_path else None
        try:
            for raw in iter(stream.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                self._tail.append(line)
                if log is not None:
                    log.write(line + "\n")
                    log.flush()
                self._emit(self.name, line)
        finally:
            stream.close()
            if log is not None:
                log.close()


class Supervisor:
    """Starts children, multiplexes their output and stops them without leaving orphans."""

    def __init__(
        self,
        *,
        output: TextIO | None = None,
        log_dir: Path | None = None,
        name_width: int = DEFAULT_NAME_WIDTH,
        tail_size: int = 200,
    ) -> None:
        """``output`` defaults to whatever ``sys.stdout`` is when a line arrives (pytest swaps it)."""
        self._output = output
        self._log_dir = log_dir
        self._name_width = name_width
        self._tail_size = tail_size
        self._children: list[ChildProcess] = []
        self._lock = threading.Lock()
        # Separate from _lock: a stalled terminal blocks writers, and must not block spawn/stop with them.
        self._output_lock = threading.Lock()

    @property
    def children(self) -> tuple[ChildProcess, ...]:
        with self._lock:
            return tuple(self._children)

    def spawn(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        stop_signal: signal.Signals = signal.SIGTERM,
        death_signal: signal.Signals = signal.SIGTERM,
        user: str | None = None,
    ) -> ChildProcess:
        """Start ``argv`` as a supervised child named ``name`` (the prefix of its output lines).

        ``user`` (only when running as root) runs the child as that system user, with that user's
        primary group and no supplementary groups.
        """
        log_path = None
        if self._log_dir is not None:
            self._log_dir.mkdir(parents=True, exist_ok=True)
            log_path = self._log_dir / f"{name}.log"
        group: int | None = None
        if user is not None:
            import pwd

            group = pwd.getpwnam(user).pw_gid
        popen = subprocess.Popen(  # noqa: S603 - argv comes from the stack's own configuration
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            process_group=0,
            preexec_fn=_death_signal_preexec(death_signal),
            user=user,
            group=group,
            extra_groups=[] if user is not None else None,
        )
        child = ChildProcess(
            name,
            popen,
            stop_signal=stop_signal,
            emit=self._emit,
            log_path=log_path,
            tail_size=self._tail_size,
        )
        with self._lock:
            self._children.append(child)
        return child

    def stop(self, children: Iterable[ChildProcess] | None = None, *, timeout: float = 10.0) -> None:
        """Stop ``children`` (default: all, newest first) together within ``timeout``, then SIGKILL.

        Also forgets them, so an exited child (e.g. a finished migration) is cleaned up here as well.
        """
        with self._lock:
            targets = list(children) if children is not None else list(reversed(self._children))
        if not targets:
            return
        # Snapshot descendants first: once their parent exits they are reparented away and can no longer
        # be found through it, and one that made its own process group escapes the group kill below.
        descendants: list[psutil.Process] = []
        for child in targets:
            descendants.extend(_descendants(child.pid))
            if child.is_running():
                # Only the leader gets the graceful signal: it knows how to shut its own helpers down
                # (postgres in particular treats SIGINT to its auxiliary processes differently).
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, child.stop_signal)
        deadline = time.monotonic() + timeout
        for child in targets:
            child.wait(max(0.0, deadline - time.monotonic()))
        leftovers = _wait_gone(descendants, deadline)
        for child in targets:
            # The leader is still unreaped here (running or zombie), so its group id cannot have been
            # recycled: killing the group reaches only what it left behind.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)
        for proc in leftovers:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()
        _wait_gone(leftovers, time.monotonic() + 5.0)
        for child in targets:
            child.popen.wait()
            child.join_output(2.0)
        with self._lock:
            self._children = [c for c in self._children if c not in targets]

    def _emit(self, name: str, line: str) -> None:
        prefix = f"[{name}]".ljust(self._name_width + 2)
        with self._output_lock:
            out = self._output if self._output is not None else sys.stdout
            try:
                out.write(f"{prefix} {line}\n")
                out.flush()
            except (ValueError, OSError):
                # The output went away (pytest closed its capture, terminal hung up); the log file and
                # the tail buffer still have the line.
                pass


def _wait_gone(procs: Iterable[psutil.Process], deadline: float) -> list[psutil.Process]:
    """Wait until every process has exited (or ``deadline``); return those still running.

    Zombies count as gone: an orphan's new parent may be an init that never reaps, and waiting for
    its zombie to disappear (as psutil.wait_procs does) would always run into the deadline.
    """
    pending = list(procs)
    while True:
        pending = [p for p in pending if _is_alive(p)]
        if not pending or time.monotonic() >= deadline:
            return pending
        time.sleep(0.05)


def _is_alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
