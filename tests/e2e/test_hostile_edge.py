"""The edge of the running platform against hostile and secret-carrying traffic, then a grep of every service's captured log for every secret that was used.

Real traffic through the gateway: a sign-in with an identity token, a refresh, a WebSocket authenticated
with ``?access_token=``, an operator call with ``X-Admin-Token``, a cookie, and calls with bad headers.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
from e2e_support import identity_token, wait_for
from websockets.asyncio.client import connect

from devstack.pytest_plugin import FULL_STACK_TEST_ENV
from devstack.testing import LocalJwksServer, raw_exchange, raw_request


def head(method: str, target: str, headers: list[tuple[str, str]], body: bytes = b"") -> bytes:
    return raw_request(target, headers, method=method, host="e2e", body=body)


def error_code(status_headers_body: tuple[int, dict[str, str], bytes]) -> tuple[int, str]:
    status, headers, body = status_headers_body
    assert headers["content-type"] == "application/json", (status, headers, body[:200])
    return status, str(json.loads(body)["code"])


def log_files(stack: Any) -> list[Path]:
    directory = stack.config.log_dir or stack.config.data_dir / "logs"
    return sorted(Path(directory).glob("*.log"))


async def test_hostile_edge_traffic_and_no_secret_in_any_log(
    stack: Any, http: httpx.AsyncClient, idp_a: LocalJwksServer
) -> None:
    gateway = stack.gateway_url
    admin_token = FULL_STACK_TEST_ENV["ADMIN_TOKEN"]
    id_token = identity_token(idp_a, f"edge-{uuid.uuid4().hex[:8]}")
    signed_in = await http.post(
        "/v1/auth/oauth/idp-a", json={"idToken": id_token}, headers={"Cookie": "sid=cookie-secret-1"}
    )
    assert signed_in.status_code == 200, signed_in.text
    first = signed_in.json()
    refreshed = await http.post("/v1/auth/refresh", json={"refreshToken": first["refreshToken"]})
    assert refreshed.status_code == 200, refreshed.text
    session = refreshed.json()
    token = session["accessToken"]
    secrets = {
        "identity token": id_token,
        "first access token": first["accessToken"],
        "first refresh token": first["refreshToken"],
        "access token": token,
        "refresh token": session["refreshToken"],
        "admin token": admin_token,
        "cookie": "cookie-secret-1",
    }

    # A WebSocket authenticated in the query string (browsers cannot set headers): uvicorn logs its path.
    ws_url = gateway.replace("http://", "ws://", 1) + f"/v1/events?access_token={token}"
    async with connect(ws_url, proxy=None, open_timeout=60):
        pass

    # Trailing whitespace after a credential is not part of it (no 503, nothing logged).
    me = await raw_exchange(gateway, head("GET", "/v1/me", [("Authorization", f"Bearer {token} ")]))
    assert me[0] == 200, me
    user_id = json.loads(me[2])["id"]
    body = b'{"isPro": true}'
    admin = head(
        "PUT",
        f"/v1/admin/users/{user_id}/subscription",
        [
            ("X-Admin-Token", f"{admin_token} "),
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
        ],
        body,
    )
    assert (await raw_exchange(gateway, admin))[0] == 204
    wrong_admin = await http.put(
        f"/v1/admin/users/{user_id}/subscription", json={"isPro": True}, headers={"X-Admin-Token": "guess"}
    )
    assert wrong_admin.status_code in (401, 403), wrong_admin.text

    # Bad headers and framing: bounded, and answered as {code, message} by the server layer.
    flood = head("GET", "/v1/auth/jwks", [(f"x-f{i}", "a") for i in range(12_000)])
    assert error_code(await raw_exchange(gateway, flood)) == (431, "headers-too-large")
    long_query = head("GET", "/v1/auth/jwks?q=" + "a" * 70_000, [])
    assert error_code(await raw_exchange(gateway, long_query)) == (414, "uri-too-long")
    bad_length = head("POST", "/v1/auth/anonymous", [("Content-Length", "1x")])
    assert error_code(await raw_exchange(gateway, bad_length)) == (400, "invalid-request")
    with_token_in_bad_request = head("GET", "/v1/me HTTP/1.1 junk", [("Authorization", f"Bearer {token}")])
    assert error_code(await raw_exchange(gateway, with_token_in_bad_request)) == (400, "invalid-request")

    # No redirects, no internal Location, no /metrics on the client port.
    for path in ("/v1/me/", "/v1/bookmarks/delta/", "/v1/auth/jwks/", f"/v1/admin/users/{user_id}/subscription/"):
        response = await http.get(path, headers={"Authorization": f"Bearer {token}", "X-Admin-Token": admin_token})
        assert response.status_code == 404 and "location" not in response.headers, (path, response.status_code)
        assert response.json()["code"] == "not-found"
    assert (await http.get("/metrics")).status_code == 404

    # Everything above is in the logs once a marker request logged after it is there.
    marker = uuid.uuid4().hex
    assert (await http.get("/v1/auth/jwks", headers={"X-Request-Id": marker})).status_code == 200

    def gateway_log_has_marker() -> bool:
        return any(marker in p.read_text(errors="replace") for p in log_files(stack) if p.name.startswith("gateway"))

    async def marker_logged() -> bool:
        return gateway_log_has_marker()

    await wait_for(marker_logged, timeout=60, what="the marker request in the gateway log")
    files = log_files(stack)
    assert {p.stem for p in files} >= {"gateway", "auth", "bookmarks", "enrichment", "enrichment-worker"}
    leaks = [
        f"{name} in {path.name}"
        for path in files
        for name, secret in secrets.items()
        if secret in path.read_text(errors="replace")
    ]
    assert not leaks, leaks
    gateway_log = next(p for p in files if p.stem == "gateway").read_text(errors="replace")
    assert "access_token=[redacted]" in gateway_log  # uvicorn's WebSocket line was written, redacted
