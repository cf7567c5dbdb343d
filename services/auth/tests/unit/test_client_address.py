"""Which address the anonymous rate limit counts: the gateway's X-Client-IP, never X-Forwarded-For."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from auth.api.deps import client_address


def _request(headers: dict[str, str], peer: str = "10.0.0.5") -> Request:
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    return Request({"type": "http", "headers": raw, "client": (peer, 40000)})


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, "10.0.0.5"),
        ({"X-Client-IP": "203.0.113.7"}, "203.0.113.7"),
        ({"X-Client-IP": " 203.0.113.7 "}, "203.0.113.7"),
        ({"X-Client-IP": ""}, "10.0.0.5"),
        # Behind an ingress the rightmost X-Forwarded-For entry is the ingress: never used here.
        ({"X-Forwarded-For": "203.0.113.7, 10.1.2.3"}, "10.0.0.5"),
        ({"X-Forwarded-For": "198.51.100.1", "X-Client-IP": "203.0.113.7"}, "203.0.113.7"),
    ],
)
def test_the_gateways_client_address_else_the_peer(headers: dict[str, str], expected: str) -> None:
    assert client_address(_request(headers)) == expected
