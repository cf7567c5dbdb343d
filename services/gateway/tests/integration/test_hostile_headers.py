"""Hostile requests at the gateway's edge: header floods, long URLs, malformed framing,
whitespace in header values, internal redirects, and the client address behind trusted proxies.

Raw sockets where an HTTP client library would refuse to send the request (or would trim it first).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest

from devstack.testing import raw_exchange, raw_request, send_endless_header


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def received_headers(response: httpx.Response) -> dict[str, list[str]]:
    seen: dict[str, list[str]] = {}
    for key, value in response.json()["headers"]:
        seen.setdefault(key.lower(), []).append(value)
    return seen


def request_bytes(target: str, headers: list[tuple[str, str]], method: str = "GET") -> bytes:
    return raw_request(target, headers, method=method, host="gateway.test")


def json_error(status: int, headers: dict[str, str], body: bytes) -> tuple[int, str]:
    assert headers["content-type"] == "application/json", headers
    payload = json.loads(body)
    assert set(payload) == {"code", "message"} and payload["message"], payload
    return status, str(payload["code"])


async def test_a_header_flood_is_refused_with_431_and_normal_requests_still_pass(gateway: Any) -> None:
    flood = request_bytes("/v1/auth/jwks", [(f"x-f{i}", "a") for i in range(12_000)])
    assert json_error(*await raw_exchange(gateway.url, flood)) == (431, "headers-too-large")
    assert (await gateway.client.get("/v1/auth/jwks")).status_code == 200


async def test_one_16_mib_header_is_refused_without_reading_it_whole(gateway: Any) -> None:
    first = await send_endless_header(gateway.url, "/v1/auth/jwks")
    assert first.startswith(b"HTTP/1.1 431 ") and b"headers-too-large" in first


async def test_a_70_kb_query_string_is_refused_with_json(gateway: Any) -> None:
    request = request_bytes("/v1/auth/jwks?q=" + "a" * 70_000, [])
    assert json_error(*await raw_exchange(gateway.url, request)) == (414, "uri-too-long")


@pytest.mark.parametrize(
    "request_head",
    [
        b"POST /v1/auth/anonymous HTTP/1.1\r\nHost: g\r\nContent-Length: 1x\r\n\r\n",
        b"GET /v1/auth/jwks HTTP/1.1 junk\r\nHost: g\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
    ],
    ids=["malformed-content-length", "invalid-request-line", "tls-on-plain-port"],
)
async def test_what_the_server_layer_refuses_is_json(gateway: Any, request_head: bytes) -> None:
    assert json_error(*await raw_exchange(gateway.url, request_head)) == (400, "invalid-request")


async def test_a_trailing_space_after_the_token_is_not_part_of_it(gateway: Any, tokens: Any) -> None:
    token = tokens.mint()
    request = request_bytes(
        "/v1/bookmarks/delta", [("Authorization", f"Bearer {token} "), ("X-Admin-Token", "guess \t")]
    )
    status, _, body = await raw_exchange(gateway.url, request)
    assert status == 200
    seen = {k.lower(): v for k, v in json.loads(body)["headers"]}
    assert seen["authorization"] == f"Bearer {token}"
    assert seen["x-admin-token"] == "guess"


async def test_only_the_headers_upstreams_use_are_forwarded(gateway: Any, tokens: Any) -> None:
    response = await gateway.client.get(
        "/v1/bookmarks/delta",
        headers={
            **bearer(tokens.mint()),
            "Accept": "application/json",
            "Cookie": "session=secret",
            "X-Client-IP": "6.6.6.6",
            "X-Anything": "x",
            "Forwarded": "for=6.6.6.6",
            "Expect": "100-continue",
        },
    )
    seen = received_headers(response)
    assert seen["accept"] == ["application/json"]
    for dropped in ("cookie", "x-anything", "forwarded", "expect"):
        assert dropped not in seen, dropped
    assert seen["x-client-ip"] == ["127.0.0.1"]  # always overwritten by the gateway


async def test_a_location_naming_an_upstream_becomes_relative(gateway: Any, tokens: Any, stand_in: Any) -> None:
    response = await gateway.client.get("/v1/bookmarks/redirect", headers=bearer(tokens.mint()))
    assert response.status_code == 307
    assert response.headers["location"] == "/v1/bookmarks/delta?after=1"
    assert stand_in.url.removeprefix("http://") not in response.headers["location"]
    outside = await gateway.client.get(
        "/v1/bookmarks/redirect", params={"to": "https://example.com/x"}, headers=bearer(tokens.mint())
    )
    assert outside.headers["location"] == "https://example.com/x"


@pytest.mark.parametrize(
    "path", ["/v1/me/", "/v1/bookmarks/delta/", "/v1/auth/jwks/", "/v1/admin/users/u1/subscription/"]
)
async def test_trailing_slashes_never_redirect(gateway: Any, path: str) -> None:
    response = await gateway.client.get(path, headers={"X-Admin-Token": "t"})
    assert response.status_code != 307 and "location" not in response.headers


@pytest.mark.parametrize(
    ("hops", "forwarded_for", "expected"),
    [
        (0, "203.0.113.5", "127.0.0.1"),  # no trusted proxy: the socket peer, whatever the client wrote
        (1, "203.0.113.5", "203.0.113.5"),  # one ingress appended the client it saw
        (1, "6.6.6.6, 203.0.113.5", "203.0.113.5"),  # the client's own extra entry is ignored
        (2, "6.6.6.6, 203.0.113.5, 10.0.0.7", "203.0.113.5"),  # CDN + ingress; spoofed entry left of them
    ],
)
async def test_the_client_address_comes_from_trusted_hops_only(
    start_gateway: Any, tokens: Any, hops: int, forwarded_for: str, expected: str
) -> None:
    async with start_gateway(trusted_proxy_hops=hops) as gw:
        response = await gw.client.get(
            "/v1/bookmarks/delta",
            headers={**bearer(tokens.mint()), "X-Forwarded-For": forwarded_for, "X-Client-IP": "6.6.6.6"},
        )
    assert received_headers(response)["x-client-ip"] == [expected]


async def test_no_header_value_reaches_the_proxy_logs(
    gateway: Any, tokens: Any, caplog: pytest.LogCaptureFixture
) -> None:
    token = tokens.mint()
    with caplog.at_level(logging.DEBUG):
        await raw_exchange(gateway.url, request_bytes("/v1/bookmarks/delta", [("Authorization", f"Bearer {token} ")]))
        await raw_exchange(
            gateway.url, request_bytes("/v1/admin/users/u/subscription", [("X-Admin-Token", "hunter2 ")])
        )
    text = "\n".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    assert token not in text and "hunter2" not in text
