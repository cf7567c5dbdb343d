"""Which IP addresses the fetcher may connect to (docs/api-guide.md, section 6).

The policy is a deny-list of every special-purpose range an attacker could use to reach us or our
neighbours (loopback, private, link-local and cloud metadata, CGNAT, ...), plus, for IPv6, an allow-list
of global unicast space: anything outside 2000::/3 is reserved and never a public web server.
The stdlib's own flags are consulted as well, as a second opinion that tracks newer IANA registrations.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from typing import Final

__all__ = ["IPAddress", "is_blocked_address", "parse_host_literal"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _v4(*cidrs: str) -> tuple[ipaddress.IPv4Network, ...]:
    return tuple(ipaddress.IPv4Network(cidr) for cidr in cidrs)


def _v6(*cidrs: str) -> tuple[ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.IPv6Network(cidr) for cidr in cidrs)


_BLOCKED_V4: Final = _v4(
    "0.0.0.0/8",  # "this network", includes the unspecified address
    "10.0.0.0/8",  # private
    "100.64.0.0/10",  # carrier-grade NAT
    "127.0.0.0/8",  # loopback
    "169.254.0.0/16",  # link-local, includes cloud metadata 169.254.169.254
    "172.16.0.0/12",  # private
    "192.0.0.0/24",  # IETF protocol assignments
    "192.0.2.0/24",  # documentation TEST-NET-1
    "192.88.99.0/24",  # deprecated 6to4 relay anycast
    "192.168.0.0/16",  # private
    "198.18.0.0/15",  # benchmarking
    "198.51.100.0/24",  # documentation TEST-NET-2
    "203.0.113.0/24",  # documentation TEST-NET-3
    "224.0.0.0/4",  # multicast
    "240.0.0.0/4",  # reserved, includes broadcast 255.255.255.255
)

_BLOCKED_V6: Final = _v6(
    "::/128",  # unspecified
    "::1/128",  # loopback
    "::/96",  # deprecated IPv4-compatible addresses
    "::ffff:0:0/96",  # IPv4-mapped: the kernel would connect to the embedded IPv4 address
    "64:ff9b:1::/48",  # local-use NAT64
    "100::/64",  # discard-only
    "2001::/23",  # IETF protocol assignments, includes Teredo 2001::/32 and benchmarking
    "2001:db8::/32",  # documentation
    "3fff::/20",  # documentation
    "5f00::/16",  # SRv6 SIDs
    "fc00::/7",  # unique local
    "fe80::/10",  # link-local
    "fec0::/10",  # deprecated site-local
    "ff00::/8",  # multicast
)

_GLOBAL_UNICAST_V6: Final = ipaddress.IPv6Network("2000::/3")
_NAT64_WELL_KNOWN: Final = ipaddress.IPv6Network("64:ff9b::/96")
_SIX_TO_FOUR: Final = ipaddress.IPv6Network("2002::/16")

# Characters of the numeric IPv4 spellings inet_aton accepts (decimal, octal, hex, 1 to 4 parts).
_NUMERIC_HOST: Final = re.compile(r"[0-9a-fA-FxX.]+")


def is_blocked_address(ip: IPAddress) -> bool:
    """True when a fetch must not connect to ``ip``."""
    if isinstance(ip, ipaddress.IPv4Address):
        return _in_any(ip, _BLOCKED_V4) or _stdlib_says_special(ip)
    # Addresses that tunnel to an IPv4 address are judged by the address they reach.
    embedded = _embedded_ipv4(ip)
    if embedded is not None:
        return is_blocked_address(embedded)
    return ip not in _GLOBAL_UNICAST_V6 or _in_any(ip, _BLOCKED_V6) or _stdlib_says_special(ip)


def parse_host_literal(host: str) -> IPAddress | None:
    """Return the address a URL host denotes literally, or None when it is a name to resolve.

    Accepts ``[v6]`` and bare IPv6, and every IPv4 spelling browsers and ``inet_aton`` accept:
    ``2130706433``, ``0x7f.1``, ``017700000001``, ``127.1``; so no spelling of a blocked address
    slips through as a "hostname".
    """
    literal = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if ":" in literal:
        try:
            return ipaddress.IPv6Address(literal)
        except ValueError:
            return None
    literal = literal.removesuffix(".")
    # inet_aton ignores anything after whitespace, so only feed it strings that are purely numeric.
    if not literal or not _NUMERIC_HOST.fullmatch(literal):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(literal))
    except OSError:
        return None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip in _NAT64_WELL_KNOWN:
        return ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
    if ip in _SIX_TO_FOUR:
        return ip.sixtofour
    return None


def _in_any(ip: IPAddress, networks: Iterable[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> bool:
    return any(ip in network for network in networks)


def _stdlib_says_special(ip: IPAddress) -> bool:
    return (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or (isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local)
    )
