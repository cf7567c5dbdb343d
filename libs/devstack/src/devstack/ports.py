"""Ports for test stacks that no other stack on the machine can be handed at the same time.

A port the kernel picks (``bind(("", 0))``) is free only at that instant: a stack that frees it and
binds it again seconds later, when its service starts, can meet another stack's process that was
handed the same number meanwhile (test groups run in parallel processes). Leases avoid that:

* ports come from ``LEASE_RANGE``, below the kernel's ephemeral range (``ip_local_port_range`` starts
  at 32768 on Linux, 49152 on macOS), so neither a kernel-picked listening port nor the local end of
  an outgoing connection lands on one;
* each leased port holds an exclusive ``flock`` on ``<tmp>/devstack-ports/<port>`` for the rest of the
  process's life, so other processes skip it; the kernel drops the lock when the process ends, however
  it ends.
"""

from __future__ import annotations

import fcntl
import os
import random
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from devstack.errors import ConfigError

LEASE_RANGE = range(20000, 32000)
LEASE_DIR = Path(tempfile.gettempdir()) / "devstack-ports"

_held: dict[int, int] = {}  # port -> the descriptor holding its lock
_lock = threading.Lock()


def lease_ports(count: int, is_free: Callable[[int], bool]) -> list[int]:
    """``count`` distinct ports, each free now (``is_free``) and leased by this process until it exits."""
    LEASE_DIR.mkdir(exist_ok=True)
    chosen: list[int] = []
    start = random.randrange(len(LEASE_RANGE))  # noqa: S311 - spreading processes out, not a secret
    with _lock:
        for step in range(len(LEASE_RANGE)):
            port = LEASE_RANGE[(start + step) % len(LEASE_RANGE)]
            if port not in _held and _take(port, is_free):
                chosen.append(port)
                if len(chosen) == count:
                    return chosen
    raise ConfigError(f"no {count} free ports left in {LEASE_RANGE.start}-{LEASE_RANGE.stop - 1}")


def _take(port: int, is_free: Callable[[int], bool]) -> bool:
    fd = os.open(LEASE_DIR / str(port), os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    if not is_free(port):
        os.close(fd)  # closing drops the lock
        return False
    _held[port] = fd
    return True
