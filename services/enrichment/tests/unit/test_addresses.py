import ipaddress

import pytest

from enrichment.fetch import is_blocked_address, parse_host_literal

BLOCKED = [
    # IPv4
    "127.0.0.1",
    "127.255.255.254",
    "10.1.2.3",
    "10.255.255.255",
    "172.16.0.1",
    "172.31.255.254",
    "192.168.1.1",
    "169.254.169.254",  # cloud metadata
    "169.254.0.1",
    "100.64.0.1",
    "100.127.255.254",
    "0.0.0.0",
    "0.1.2.3",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "198.18.0.1",
    "198.19.255.254",
    "192.0.0.8",
    "192.0.2.1",
    "198.51.100.7",
    "203.0.113.9",
    "192.88.99.1",
    # IPv6
    "::",
    "::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:93.184.216.34",  # every IPv4-mapped address, even a public one
    "::127.0.0.1",  # deprecated IPv4-compatible
    "fe80::1",
    "febf::1",
    "fec0::1",
    "fc00::1",
    "fd12:3456:789a::1",
    "ff02::1",
    "ff0e::1",
    "100::1",
    "2001:db8::1",
    "3fff::1",
    "2001::1",  # Teredo
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "2001:2::1",  # benchmarking
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "64:ff9b:1::1",  # local-use NAT64
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "2002:a00:1::1",  # 6to4 of 10.0.0.1
    "2002:c0a8:101::1",  # 6to4 of 192.168.1.1
    "5f00::1",
    "4000::1",  # outside global unicast
    "fe80::1%eth0",
]

ALLOWED = [
    "93.184.216.34",
    "1.1.1.1",
    "8.8.8.8",
    "172.15.255.255",
    "172.32.0.1",
    "100.63.255.255",
    "100.128.0.1",
    "169.253.255.255",
    "192.169.0.1",
    "11.0.0.1",
    "223.255.255.254",
    "2606:4700::1111",
    "2a00:1450:4001:82b::200e",
    "2620:fe::fe",
    "64:ff9b::5db8:d822",  # NAT64 of 93.184.216.34
    "2002:5db8:d822::1",  # 6to4 of 93.184.216.34
]


@pytest.mark.parametrize("address", BLOCKED)
def test_blocked(address: str) -> None:
    assert is_blocked_address(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ALLOWED)
def test_allowed(address: str) -> None:
    assert not is_blocked_address(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0x7F.0x0.0x0.0x1", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0xa9fea9fe", "169.254.169.254"),
        ("10.1", "10.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("::1", "::1"),
        ("[::1]", "::1"),
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),
        ("[2606:4700::1111]", "2606:4700::1111"),
    ],
)
def test_parse_host_literal(host: str, expected: str) -> None:
    assert parse_host_literal(host) == ipaddress.ip_address(expected)


@pytest.mark.parametrize(
    "host",
    [
        "example.com",
        "localhost",
        "cafe",
        "deadbeef",
        "1e100.net",
        "1.2.3.4 evil",
        "1.2.3.999",
        "08.0.0.1",
        "",
        "[nope]",
    ],
)
def test_parse_host_literal_leaves_names_alone(host: str) -> None:
    assert parse_host_literal(host) is None


@pytest.mark.parametrize("host", ["2130706433", "0x7f.1", "017700000001", "127.1", "0xa9fea9fe"])
def test_numeric_spellings_of_blocked_addresses_are_blocked(host: str) -> None:
    literal = parse_host_literal(host)
    assert literal is not None
    assert is_blocked_address(literal)
