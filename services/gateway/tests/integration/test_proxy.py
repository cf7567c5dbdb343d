"""Proxy mechanics against a tiny stand-in upstream: headers, streaming, failures, limits, auth at the edge."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY

from devstack.testing import free_port
from gateway.ratelimit import TokenBucketLimiter

ONE_MIB = 1024 * 1024
INCOMING_TRACE = "0af7651916cd43dd8448eb211c80319c"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def received_headers(response: httpx.Response) -> dict[str, list[str]]:
    """The request headers the stand-in upstream received, by lower-case name."""
    seen: dict[str, list[str]] = {}
    for key, value in response.json()["headers"]:
        seen.setdefault(key.lower(), []).append(value)
    return seen


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_request_is_forwarded_with_edge_headers_and_without_hop_by_hop(gateway: Any, tokens: Any) -> None:
    token = tokens.mint()
    response = await gateway.client.put(
        "/v1/bookmarks/abc-1?b=2&a=%2F",
        json={"url": "https://example.com"},
        headers={
            **bearer(token),
            "Connection": "keep-alive, X-Client-Hop",
            "X-Client-Hop": "must-not-pass",
            "Keep-Alive": "timeout=5",
            "Proxy-Authorization": "Basic eDp5",
            "TE": "trailers",
            "X-Request-Id": "req-123",
            "traceparent": f"00-{INCOMING_TRACE}-b7ad6b7169203331-01",
            "X-Custom": "end-to-end",
        },
    )
    assert response.status_code == 200
    echo = response.json()
    assert (echo["method"], echo["raw_path"], echo["query"]) == ("PUT", "/v1/bookmarks/abc-1", "b=2&a=%2F")
    assert echo["body_length"] > 0
    seen = received_headers(response)
    for hop in ("connection", "x-client-hop", "keep-alive", "proxy-authorization", "te"):
        assert hop not in seen, hop
    assert seen["authorization"] == [f"Bearer {token}"]  # services verify the token again
    assert "x-custom" not in seen  # only the headers upstreams use pass (an allow-list)
    assert seen["x-request-id"] == ["req-123"]
    assert seen["x-forwarded-for"] == ["127.0.0.1"]
    assert seen["x-client-ip"] == ["127.0.0.1"]
    assert seen["x-forwarded-proto"] == ["http"]
    assert seen["x-forwarded-host"] == [gateway.url.removeprefix("http://")]
    (traceparent,) = seen["traceparent"]
    _, trace_id, span_id, _ = traceparent.split("-")
    assert trace_id == INCOMING_TRACE and span_id != "b7ad6b7169203331"
    assert response.headers.get_list("x-request-id") == ["req-123"]


async def test_forwarded_for_is_appended(gateway: Any, tokens: Any) -> None:
    response = await gateway.client.get(
        "/v1/bookmarks/delta", headers={**bearer(tokens.mint()), "X-Forwarded-For": "203.0.113.9"}
    )
    (forwarded,) = received_headers(response)["x-forwarded-for"]
    hops = [h.strip() for h in forwarded.split(",")]
    assert hops[0] == "203.0.113.9" and len(hops) == 2


async def test_a_request_id_is_assigned_and_forwarded(gateway: Any, tokens: Any) -> None:
    response = await gateway.client.get("/v1/bookmarks/delta", headers=bearer(tokens.mint()))
    assert received_headers(response)["x-request-id"] == response.headers.get_list("x-request-id")


async def test_response_status_and_headers_are_preserved_without_hop_by_hop(gateway: Any, tokens: Any) -> None:
    response = await gateway.client.get("/v1/bookmarks/hop", headers=bearer(tokens.mint()))
    assert response.status_code == 418
    assert response.text == "teapot"
    assert response.headers["content-type"].startswith("text/plain")
    assert response.headers["x-end-to-end"] == "kept"
    assert response.headers.get_list("set-cookie") == ["a=1; Path=/", "b=2; Path=/"]
    for hop in ("x-upstream-hop", "keep-alive", "proxy-authenticate"):
        assert hop not in response.headers, hop
    assert "x-upstream-hop" not in response.headers.get("connection", "").lower()


async def test_cookies_of_one_response_are_never_replayed_upstream(gateway: Any, tokens: Any) -> None:
    # Separate clients with empty jars: only the gateway could carry the cookie from one to the other.
    async with httpx.AsyncClient(base_url=gateway.url) as first:
        assert (await first.get("/v1/bookmarks/hop", headers=bearer(tokens.mint()))).headers.get_list("set-cookie")
    async with httpx.AsyncClient(base_url=gateway.url) as second:
        response = await second.get("/v1/bookmarks/delta", headers=bearer(tokens.mint()))
    assert "cookie" not in received_headers(response)


async def test_no_content_responses_pass_through(gateway: Any, tokens: Any) -> None:
    response = await gateway.client.delete("/v1/bookmarks/empty", headers=bearer(tokens.mint()))
    assert response.status_code == 204
    assert response.content == b""


async def test_response_body_is_streamed(gateway: Any, stand_in: Any, tokens: Any) -> None:
    stand_in.reset()
    async with gateway.client.stream("GET", "/v1/bookmarks/stream", headers=bearer(tokens.mint())) as response:
        chunks = response.aiter_raw()
        # The upstream holds back the rest until we have the first part: a buffering proxy never delivers it.
        first = await asyncio.wait_for(anext(chunks), 15)
        assert first == b"first\n"
        stand_in.release_stream.set()
        rest = b"".join([chunk async for chunk in chunks])
    assert rest == b"second\n"


async def test_request_body_is_streamed(gateway: Any, stand_in: Any, tokens: Any) -> None:
    stand_in.reset()

    async def body() -> AsyncIterator[bytes]:
        yield b"x" * 1000
        # The rest of the body only exists once the upstream has received the first part.
        await asyncio.wait_for(stand_in.first_upload_chunk.wait(), 15)
        yield b"y" * 1000

    response = await gateway.client.post("/v1/bookmarks/upload", content=body(), headers=bearer(tokens.mint()))
    assert response.status_code == 200
    assert response.json() == {"received": 2000}


async def test_upstream_refusing_connections_is_503(start_gateway: Any, tokens: Any) -> None:
    before = metric("gateway_upstream_errors_total", upstream="bookmarks", kind="connect")
    async with start_gateway(bookmarks_url=f"http://127.0.0.1:{free_port()}") as gw:
        response = await gw.client.get("/v1/bookmarks/delta", headers=bearer(tokens.mint()))
    assert response.status_code == 503
    assert response.json()["code"] == "unavailable"
    assert set(response.json()) == {"code", "message"}
    assert int(response.headers["retry-after"]) >= 1
    assert metric("gateway_upstream_errors_total", upstream="bookmarks", kind="connect") == before + 1


async def test_upstream_name_not_resolving_is_503(start_gateway: Any, tokens: Any) -> None:
    async with start_gateway(enrichment_url="http://enrichment.invalid:8083") as gw:
        response = await gw.client.get("/v1/enrichment/status?clientBookmarkId=a", headers=bearer(tokens.mint()))
    assert response.status_code == 503
    assert response.json()["code"] == "unavailable"
    assert "retry-after" in response.headers


async def test_slow_upstream_is_504(start_gateway: Any, tokens: Any) -> None:
    before = metric("gateway_upstream_errors_total", upstream="bookmarks", kind="timeout")
    async with start_gateway(upstream_timeout_seconds=0.2) as gw:
        response = await gw.client.get("/v1/bookmarks/slow", headers=bearer(tokens.mint()))
    assert response.status_code == 504
    assert response.json() == {"code": "upstream-timeout", "message": response.json()["message"]}
    assert metric("gateway_upstream_errors_total", upstream="bookmarks", kind="timeout") == before + 1


@pytest.mark.parametrize(
    "path",
    [
        "/internal/users/1",
        "/v1/internal/users/1",
        "/v1/unknown",
        "/v1/bookmarks/%2e%2e/%2e%2e/internal/users/1",
        "/v1/account/",
    ],
)
async def test_paths_outside_the_table_are_404(gateway: Any, tokens: Any, path: str) -> None:
    response = await gateway.client.get(path, headers=bearer(tokens.mint()))
    assert response.status_code == 404
    assert response.json()["code"] == "not-found"


async def test_body_over_one_mib_is_413(gateway: Any, stand_in: Any, tokens: Any) -> None:
    stand_in.reset()
    headers = bearer(tokens.mint())
    exact = await gateway.client.post("/v1/bookmarks/upload", content=b"a" * ONE_MIB, headers=headers)
    assert exact.status_code == 200
    declared = await gateway.client.post("/v1/bookmarks/upload", content=b"a" * (ONE_MIB + 1), headers=headers)
    assert declared.status_code == 413
    assert declared.json()["code"] == "payload-too-large"

    async def chunked() -> AsyncIterator[bytes]:  # no Content-Length: counted while streaming upstream
        for _ in range(16):
            yield b"b" * (64 * 1024)
        yield b"b"

    streamed = await gateway.client.post("/v1/bookmarks/upload", content=chunked(), headers=headers)
    assert streamed.status_code == 413
    assert streamed.json()["code"] == "payload-too-large"
    assert ONE_MIB + 1 not in stand_in.uploads  # the upstream never got a complete oversized body


async def test_a_capture_may_send_sixteen_mib_and_no_more(gateway: Any, stand_in: Any, tokens: Any) -> None:
    stand_in.reset()
    headers = bearer(tokens.mint())
    limit = 16 * ONE_MIB

    exact = await gateway.client.post("/v1/enrichment/capture", content=b"a" * limit, headers=headers)
    over = await gateway.client.post("/v1/enrichment/capture", content=b"a" * (limit + 1), headers=headers)

    assert exact.status_code == 200
    assert exact.json() == {"received": limit}
    assert over.status_code == 413
    assert over.json()["code"] == "payload-too-large"
    assert "16 MiB" in over.json()["message"]
    # Only that route: the same body to another path of the section keeps the 1 MiB limit.
    other = await gateway.client.post("/v1/enrichment/enqueue", content=b"a" * (ONE_MIB + 1), headers=headers)
    assert other.status_code == 413


async def test_protected_routes_need_a_valid_bearer(gateway: Any, tokens: Any, jwks_server: Any) -> None:
    cases = {
        "missing": {},
        "not bearer": {"Authorization": "Basic eDp5"},
        "garbage": bearer("not-a-jwt"),
        "expired": bearer(tokens.mint(expires_in=-30)),
        "wrong audience": bearer(tokens.mint(aud="someone-else")),
        "no jti": bearer(jwks_server.mint(sub=str(uuid.uuid4()))),
        "not a uuid subject": bearer(jwks_server.mint(sub="alice", claims={"jti": "j"})),
    }
    for name, headers in cases.items():
        response = await gateway.client.get("/v1/me", headers=headers)
        assert response.status_code == 401, name
        assert response.json()["code"] == "unauthorized", name
        assert response.headers["www-authenticate"] == "Bearer", name
    ok = await gateway.client.get("/v1/me", headers=bearer(tokens.mint()))
    assert ok.status_code == 200


async def test_non_string_alg_or_kid_in_the_token_header_is_401(gateway: Any, jwks_server: Any) -> None:
    hostile = jwks_server.hostile_header_tokens(sub=str(uuid.uuid4()), claims={"jti": uuid.uuid4().hex})
    for name, token in hostile.items():
        for path in ("/v1/me", "/v1/bookmarks/delta", "/v1/auth/oauth/idp-a"):
            response = await gateway.client.request(
                "GET" if path != "/v1/auth/oauth/idp-a" else "POST", path, headers=bearer(token)
            )
            assert response.status_code == 401, (name, path, response.text)
            assert response.json()["code"] == "unauthorized"


async def test_oauth_routes_verify_a_bearer_only_when_sent(gateway: Any, tokens: Any) -> None:
    for path in ("/v1/auth/oauth/idp-a", "/v1/auth/oauth/idp-b"):
        assert (await gateway.client.post(path, json={"idToken": "x"})).status_code == 200
        refused = await gateway.client.post(path, json={"idToken": "x"}, headers=bearer("garbage"))
        assert refused.status_code == 401
        linked = await gateway.client.post(path, json={"idToken": "x", "link": True}, headers=bearer(tokens.mint()))
        assert linked.status_code == 200


async def test_public_and_admin_routes_are_left_to_the_upstream(gateway: Any) -> None:
    for method, path in [
        ("POST", "/v1/auth/anonymous"),
        ("POST", "/v1/auth/refresh"),
        ("POST", "/v1/auth/logout"),
        ("GET", "/v1/auth/jwks"),
        ("POST", "/v1/auth/pairing/claim"),
        ("PUT", "/v1/admin/users/123/subscription"),
    ]:
        response = await gateway.client.request(method, path, headers=bearer("garbage"))
        assert response.status_code == 200, path
        assert received_headers(response)["authorization"] == ["Bearer garbage"]


async def test_access_log_has_the_route_template_and_user(
    gateway: Any, tokens: Any, caplog: pytest.LogCaptureFixture
) -> None:
    user = uuid.uuid4()
    caplog.set_level(logging.INFO, logger="access")
    await gateway.client.put("/v1/bookmarks/abc-77", json={}, headers=bearer(tokens.mint(user)))
    lines = [r for r in caplog.records if r.name == "access" and getattr(r, "path", "") == "/v1/bookmarks/abc-77"]
    assert len(lines) == 1
    assert lines[0].route == "/v1/bookmarks/{clientBookmarkId}"  # type: ignore[attr-defined]
    assert lines[0].user_id == str(user)  # type: ignore[attr-defined]
    assert lines[0].status == 200  # type: ignore[attr-defined]


async def test_rate_limits_per_user_and_per_ip(start_gateway: Any, tokens: Any) -> None:
    async with start_gateway(rate_limit_per_minute=3, ip_rate_limit_per_minute=2) as gw:
        state = gw.state
        assert (state.user_limiter.capacity, state.ip_limiter.capacity) == (3, 2)
        # The configured limiters on a frozen clock: no refill can happen while the test runs.
        state.user_limiter = TokenBucketLimiter(3, clock=lambda: 0.0)
        state.ip_limiter = TokenBucketLimiter(2, clock=lambda: 0.0)
        before = metric("gateway_rate_limited_total", scope="user")

        token = tokens.mint()
        answers = [await gw.client.get("/v1/bookmarks/delta", headers=bearer(token)) for _ in range(4)]
        assert [r.status_code for r in answers] == [200, 200, 200, 429]
        assert [r.headers["ratelimit-remaining"] for r in answers] == ["2", "1", "0", "0"]
        assert all(r.headers["ratelimit-limit"] == "3" for r in answers)
        assert all(int(r.headers["ratelimit-reset"]) >= 1 for r in answers)
        refused = answers[-1]
        assert refused.json()["code"] == "rate-limited"
        assert int(refused.headers["retry-after"]) >= 1
        assert metric("gateway_rate_limited_total", scope="user") == before + 1
        other_user = await gw.client.get("/v1/bookmarks/delta", headers=bearer(tokens.mint()))
        assert other_user.status_code == 200

        anonymous = [await gw.client.post("/v1/auth/anonymous") for _ in range(2)]
        assert [r.status_code for r in anonymous] == [200, 200]
        assert (await gw.client.post("/v1/auth/anonymous")).status_code == 429
        # Failed authentications are charged to the address too.
        assert (await gw.client.get("/v1/me")).status_code == 429

        for path in ("/healthz", "/readyz"):
            for _ in range(5):
                assert (await gw.client.get(path)).status_code == 200, path


async def test_preview_pictures_have_their_own_bucket_per_ip(start_gateway: Any) -> None:
    async with start_gateway(ip_rate_limit_per_minute=2, image_rate_limit_per_minute=3) as gw:
        assert gw.state.image_limiter.capacity == 3
        gw.state.ip_limiter = TokenBucketLimiter(2, clock=lambda: 0.0)
        gw.state.image_limiter = TokenBucketLimiter(3, clock=lambda: 0.0)
        picture = "/v1/previews/images/" + "a" * 64 + ".webp"
        answers = [(await gw.client.get(picture)).status_code for _ in range(4)]
        assert answers == [200, 200, 200, 429]
        # The address's other bucket is untouched by pictures, and pictures by it.
        assert [(await gw.client.post("/v1/auth/anonymous")).status_code for _ in range(3)] == [200, 200, 429]
        assert metric("gateway_rate_limited_total", scope="image") >= 1


async def test_cors_when_configured(start_gateway: Any, gateway: Any) -> None:
    preflight_headers = {
        "Origin": "https://app.example",
        "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    async with start_gateway(cors_origins="https://app.example, https://other.example") as gw:
        preflight = await gw.client.options("/v1/bookmarks/abc", headers=preflight_headers)
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "https://app.example"
        assert "PUT" in preflight.headers["access-control-allow-methods"]
        simple = await gw.client.get("/v1/me", headers={"Origin": "https://app.example"})
        assert simple.headers["access-control-allow-origin"] == "https://app.example"
        assert "x-request-id" in simple.headers["access-control-expose-headers"].lower()
        stranger = await gw.client.get("/v1/me", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in stranger.headers
    disabled = await gateway.client.get("/v1/me", headers={"Origin": "https://app.example"})
    assert "access-control-allow-origin" not in disabled.headers


async def test_combined_openapi_and_docs(start_gateway: Any, stand_in: Any) -> None:
    item = {"$ref": "#/components/schemas/Thing"}
    ok = {"200": {"description": "ok", "content": {"application/json": {"schema": item}}}}
    stand_in.openapi = {
        "openapi": "3.1.0",
        "info": {"title": "stand-in", "version": "1"},
        "paths": {
            "/v1/bookmarks/{clientBookmarkId}": {"get": {"operationId": "get_thing", "responses": ok}},
            "/internal/things/{id}": {"get": {"operationId": "internal_thing", "responses": ok}},
            "/healthz": {"get": {"operationId": "healthz", "responses": ok}},
        },
        "components": {"schemas": {"Thing": {"type": "object"}}},
    }
    async with start_gateway() as gw:
        async with asyncio.timeout(30):
            while not (document := (await gw.client.get("/v1/openapi.json")).json())["paths"]:
                await asyncio.sleep(0.05)
        assert list(document["paths"]) == ["/v1/bookmarks/{clientBookmarkId}"]
        operation = document["paths"]["/v1/bookmarks/{clientBookmarkId}"]["get"]
        assert operation["security"] == [{"bearerAuth": []}]
        assert operation["responses"]["401"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/Error"
        }
        assert set(document["components"]["schemas"]) == {"Thing", "Error"}
        assert (await gw.client.get("/openapi.json")).json() == document
        docs = await gw.client.get("/docs")
        assert docs.status_code == 200
        assert docs.headers["content-type"].startswith("text/html")
        assert "/v1/openapi.json" in docs.text


async def test_plain_get_on_the_websocket_path_is_400(gateway: Any) -> None:
    response = await gateway.client.get("/v1/events")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid-request"


async def test_pairing_needs_a_token_to_issue_and_none_to_claim(gateway: Any, tokens: Any) -> None:
    refused = await gateway.client.post("/v1/auth/pairing")
    assert refused.status_code == 401
    assert refused.json()["code"] == "unauthorized"
    assert (await gateway.client.post("/v1/auth/pairing", headers=bearer(tokens.mint()))).status_code == 200
    claimed = await gateway.client.post("/v1/auth/pairing/claim", json={"code": "ABCD-EFGH"})
    assert claimed.status_code == 200
    assert "authorization" not in received_headers(claimed)
