"""Hop-by-hop header stripping and the client address used for IP rate limits."""

from __future__ import annotations

from gateway.edge import client_ip
from gateway.proxy import strip_hop_by_hop


def test_hop_by_hop_headers_and_those_named_in_connection_are_dropped() -> None:
    headers = [
        (b"Connection", b"keep-alive, X-Secret-Hop"),
        (b"Keep-Alive", b"timeout=5"),
        (b"Proxy-Authorization", b"Basic abc"),
        (b"Proxy-Authenticate", b"Basic"),
        (b"TE", b"trailers"),
        (b"Trailer", b"X-Checksum"),
        (b"Transfer-Encoding", b"chunked"),
        (b"Upgrade", b"h2c"),
        (b"X-Secret-Hop", b"1"),
        (b"Content-Type", b"application/json"),
        (b"Set-Cookie", b"a=1"),
        (b"Set-Cookie", b"b=2"),
        (b"Authorization", b"Bearer t"),
    ]
    assert strip_hop_by_hop(headers) == [
        (b"Content-Type", b"application/json"),
        (b"Set-Cookie", b"a=1"),
        (b"Set-Cookie", b"b=2"),
        (b"Authorization", b"Bearer t"),
    ]


def test_client_ip_is_the_peer_unless_proxies_are_trusted() -> None:
    scope = {"client": ("10.0.0.9", 5555), "headers": [(b"x-forwarded-for", b"203.0.113.5, 198.51.100.7")]}
    assert client_ip(scope, 0) == "10.0.0.9"  # a client-written header is not believed
    assert client_ip(scope, 1) == "198.51.100.7"  # one load balancer: the address it saw
    assert client_ip(scope, 2) == "203.0.113.5"
    assert client_ip(scope, 5) == "203.0.113.5"  # fewer entries than hops: the oldest one
    spoofed = {"client": ("10.0.0.9", 5555), "headers": [(b"x-forwarded-for", b"6.6.6.6, 203.0.113.5")]}
    assert client_ip(spoofed, 1) == "203.0.113.5"  # the client's extra entry left of the ingress's is ignored
    assert client_ip({"headers": []}, 0) == "unknown"
