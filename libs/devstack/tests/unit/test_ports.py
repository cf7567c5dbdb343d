"""Port leases: two processes never hold the same port, and leased ports are outside the range the
kernel hands out by itself."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from devstack.ports import LEASE_RANGE, lease_ports

LEASE_AND_WAIT = textwrap.dedent(
    """
    import json, sys
    from devstack.ports import lease_ports
    print(json.dumps(lease_ports(int(sys.argv[1]), lambda port: True)), flush=True)
    sys.stdin.read()  # holds its leases until the test closes stdin
    """
)


def _ephemeral_start() -> int:
    path = Path("/proc/sys/net/ipv4/ip_local_port_range")
    return int(path.read_text().split()[0]) if path.exists() else 49152


def test_leased_ports_are_distinct_free_and_below_the_ephemeral_range() -> None:
    ports = lease_ports(40, lambda port: True)
    assert len(set(ports)) == 40
    assert all(port in LEASE_RANGE and port < _ephemeral_start() for port in ports)
    assert not set(ports) & set(lease_ports(40, lambda port: True))  # this process keeps what it took


def test_a_port_in_use_is_skipped() -> None:
    busy = set(range(LEASE_RANGE.start, LEASE_RANGE.stop, 2))
    assert not set(lease_ports(30, lambda port: port not in busy)) & busy


def test_another_process_never_gets_a_port_this_one_holds() -> None:
    holders = [
        subprocess.Popen(  # noqa: S603 - our own interpreter and script
            [sys.executable, "-c", LEASE_AND_WAIT, "3000"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    try:
        leased = [set(json.loads(h.stdout.readline())) for h in holders if h.stdout is not None]
        mine = set(lease_ports(3000, lambda port: True))
        assert len(leased) == 2 and all(len(s) == 3000 for s in leased)
        assert not leased[0] & leased[1] and not mine & (leased[0] | leased[1])
    finally:
        for holder in holders:
            holder.communicate("")
