"""Scenario (g): the error contract at the gateway (docs/api-guide.md, section 1).

Every refusal is ``{code, message}`` as ``application/json`` with an ``X-Request-Id``, whichever layer
produced it: the gateway's own routing, its authentication, its body limit, or an upstream service.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from e2e_support import Device, anonymous, assert_error


@pytest.fixture
async def user(http: httpx.AsyncClient) -> Device:
    return await anonymous(http)


@pytest.mark.parametrize(
    "path",
    ["/v1/no-such-endpoint", "/v2/bookmarks/delta", "/nothing-here", "/v1/bookmarks/a/b/c/d"],
)
async def test_unknown_route_is_404(http: httpx.AsyncClient, user: Device, path: str) -> None:
    assert_error(await user.request("GET", path), 404, "not-found")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/me"),
        ("PATCH", "/v1/bookmarks/delta"),
        ("GET", "/v1/enrichment/enqueue"),
        ("GET", "/v1/auth/anonymous"),
    ],
)
async def test_wrong_method_is_405(user: Device, method: str, path: str) -> None:
    assert_error(await user.request(method, path), 405, "method-not-allowed")


async def test_body_over_one_mebibyte_is_413(user: Device) -> None:
    big = b'{"url": "https://example.com/", "notes": "' + b"x" * (1024 * 1024) + b'"}'
    response = await user.request(
        "PUT", "/v1/bookmarks/too-big", content=big, headers={"content-type": "application/json"}
    )
    assert_error(response, 413, "payload-too-large")

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: the limit must hold for a stream too
        for _ in range(17):
            yield b"y" * (64 * 1024)

    streamed = await user.request(
        "PUT", "/v1/bookmarks/too-big", content=chunks(), headers={"content-type": "application/json"}
    )
    assert_error(streamed, 413, "payload-too-large")


@pytest.mark.parametrize(
    "path",
    [
        "/internal/users/{uid}/entitlements",
        "/internal/anything",
        "/v1/../internal/users/{uid}/entitlements",
        "/internal/anti-entropy/bookmark-urls/digests",
    ],
)
async def test_internal_routes_are_not_reachable(http: httpx.AsyncClient, user: Device, path: str) -> None:
    target = path.format(uid=user.user_id)
    # Raw path: httpx would otherwise normalise the dot segments away before sending.
    request = http.build_request("GET", target, headers=user.auth)
    request.url = request.url.copy_with(raw_path=target.encode())
    assert_error(await http.send(request), 404, "not-found")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/me"),
        ("GET", "/v1/bookmarks/delta"),
        ("PUT", "/v1/bookmarks/abc"),
        ("POST", "/v1/enrichment/enqueue"),
        ("GET", "/v1/enrichment/status?clientBookmarkId=abc"),
        ("DELETE", "/v1/account"),
    ],
)
async def test_missing_token_is_401_with_www_authenticate(http: httpx.AsyncClient, method: str, path: str) -> None:
    response = await http.request(method, path, json={} if method in ("PUT", "POST") else None)
    assert_error(response, 401, "unauthorized")
    assert response.headers.get("www-authenticate", "").lower().startswith("bearer")


async def test_bad_tokens_are_401(http: httpx.AsyncClient, user: Device) -> None:
    header, payload, _signature = user.token.split(".")
    for value in ("Bearer not-a-jwt", f"Bearer {header}.{payload}.AAAA", "Basic dXNlcjpwdw==", f"bearer{user.token}"):
        response = await http.get("/v1/me", headers={"Authorization": value})
        assert_error(response, 401, "unauthorized")
        assert response.headers.get("www-authenticate", "").lower().startswith("bearer")


async def test_upstream_errors_keep_the_contract(user: Device) -> None:
    assert_error(
        await user.request("PUT", "/v1/bookmarks/bad-url", json={"url": "ftp://example.com/"}), 400, "invalid-url"
    )
    assert_error(await user.request("PUT", "/v1/bookmarks/bad-body", content=b"{not json"), 400, "invalid-request")
    assert_error(await user.request("GET", "/v1/bookmarks/delta", params={"cursor": "forged"}), 400, "invalid-cursor")
    assert_error(await user.request("GET", "/v1/bookmarks/delta", params={"limit": 0}), 400, "invalid-request")
    assert_error(
        await user.request("PUT", "/v1/bookmarks/never-created/collections", json={"collectionIds": []}),
        404,
        "not-found",
    )


async def test_request_id_is_echoed(http: httpx.AsyncClient, user: Device) -> None:
    request_id = f"e2e-{uuid.uuid4().hex}"
    for response in (
        await http.get("/v1/no-such-endpoint", headers={"X-Request-Id": request_id}),
        await user.request("GET", "/v1/me", headers={"X-Request-Id": request_id}),
        await http.get("/v1/me", headers={"X-Request-Id": request_id}),
    ):
        assert response.headers.get("x-request-id") == request_id, response.request.url
