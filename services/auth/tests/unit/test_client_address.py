"""Which address the anonymous rate limit counts (the gateway appends its peer to X-Forwarded-For)."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from auth.api.deps import client_address


def _request(forwarded: str | None, peer: str = "10.0.0.5") -> Request:
    headers = [(b"x-forwarded-for", forwarded.encode())] if forwarded is not None else []
    return Request({"type": "http", "headers": headers, "client": (peer, 40000)})


@pytest.mark.parametrize(
    ("forwarded", "expected"),
    [
        (None, "10.0.0.5"),
        ("203.0.113.7", "203.0.113.7"),
        ("1.1.1.1, 203.0.113.7", "203.0.113.7"),
        ("spoofed, also-spoofed,203.0.113.7 ", "203.0.113.7"),
        ("", "10.0.0.5"),
        ("203.0.113.7, ", "10.0.0.5"),
    ],
)
def test_rightmost_forwarded_entry_else_peer(forwarded: str | None, expected: str) -> None:
    assert client_address(_request(forwarded)) == expected
