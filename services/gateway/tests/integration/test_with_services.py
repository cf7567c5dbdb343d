"""The edge deny-list with the real auth and bookmarks services behind the gateway (served in-process).

Account deletion and merges must be refused by the replica that proxied them from the moment the
response is returned (docs/api-guide.md, section 2), and by every other replica once ``user.deleted`` /
``user.merged`` (published by auth's outbox relay) reaches it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from devstack.testing import LocalJwksServer, serve_app

auth_main = pytest.importorskip("auth.main")
auth_settings = pytest.importorskip("auth.settings")
bookmarks_main = pytest.importorskip("bookmarks.main")
bookmarks_settings = pytest.importorskip("bookmarks.settings")

ISSUER, AUDIENCE = "gateway-it-auth", "gateway-it-api"
IDP_ISSUER, IDP_AUDIENCE = "https://idp-a.gateway.test", "gateway-it-client"
WAIT = 30.0


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def idp() -> Any:
    server = LocalJwksServer(issuer=IDP_ISSUER, audience=IDP_AUDIENCE).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
async def services(infra: Any, idp: Any) -> AsyncIterator[dict[str, str]]:
    common = {
        "kafka_bootstrap_servers": infra.kafka_bootstrap,
        "otel_exporter_otlp_endpoint": None,
        "jwt_issuer": ISSUER,
        "jwt_audience": AUDIENCE,
        "db_pool_size": 3,
    }
    auth_config = auth_settings.Settings(
        **common,
        database_url=infra.dsn("auth"),
        anonymous_rate_limit_per_minute=0,
        signing_keys_dir=None,
        idp_a_jwks_url=idp.jwks_url,
        idp_a_issuer=IDP_ISSUER,
        idp_a_audience=IDP_AUDIENCE,
    )
    async with serve_app(auth_main.create_app(auth_config)) as auth_url:
        bookmarks_config = bookmarks_settings.Settings(**common, database_url=infra.dsn("bookmarks"), auth_url=auth_url)
        async with serve_app(bookmarks_main.create_app(bookmarks_config)) as bookmarks_url:
            yield {"auth_url": auth_url, "bookmarks_url": bookmarks_url}


def _through(services: dict[str, str]) -> dict[str, Any]:
    return {**services, "jwks_url_override": None, "jwt_issuer": ISSUER, "jwt_audience": AUDIENCE}


async def _status_becomes(gw: Any, token: str, status: int) -> None:
    async with asyncio.timeout(WAIT):
        while (await gw.client.get("/v1/bookmarks/delta", headers=bearer(token))).status_code != status:
            await asyncio.sleep(0.05)


async def _close_code(ws: Any) -> int:
    try:
        async with asyncio.timeout(WAIT):
            while True:
                await ws.recv()
    except ConnectionClosed as closed:
        assert closed.rcvd is not None
        return closed.rcvd.code
    raise AssertionError("unreachable")


async def test_account_deletion_is_refused_at_once_here_and_soon_everywhere(
    start_gateway: Any, services: dict[str, str]
) -> None:
    async with start_gateway(**_through(services)) as here, start_gateway(**_through(services)) as there:
        session = (await here.client.post("/v1/auth/anonymous")).json()
        token = session["accessToken"]
        for gw in (here, there):
            assert (await gw.client.get("/v1/bookmarks/delta", headers=bearer(token))).status_code == 200
        async with connect(there.ws_url, additional_headers=bearer(token), proxy=None) as elsewhere:
            deleted = await here.client.delete("/v1/account", headers=bearer(token))
            assert deleted.status_code == 204
            # The very next request on the replica that proxied the deletion, before any event could help.
            refused = await here.client.get("/v1/bookmarks/delta", headers=bearer(token))
            assert refused.status_code == 401
            assert refused.json()["code"] == "unauthorized"
            # The other replica learns it from user.deleted.
            assert await _close_code(elsewhere) == 4401
        await _status_becomes(there, token, 401)


async def test_a_link_that_merges_the_caller_away_refuses_its_token_at_once(
    start_gateway: Any, services: dict[str, str], idp: Any
) -> None:
    subject = f"ext-{uuid.uuid4().hex}"
    async with start_gateway(**_through(services)) as gw:
        owner = await gw.client.post("/v1/auth/oauth/idp-a", json={"idToken": idp.mint(sub=subject)})
        assert owner.status_code == 200
        anonymous = (await gw.client.post("/v1/auth/anonymous")).json()
        token = anonymous["accessToken"]
        linked = await gw.client.post(
            "/v1/auth/oauth/idp-a", json={"idToken": idp.mint(sub=subject), "link": True}, headers=bearer(token)
        )
        assert linked.status_code == 200
        assert linked.json()["user"]["id"] == owner.json()["user"]["id"]
        refused = await gw.client.get("/v1/bookmarks/delta", headers=bearer(token))
        assert refused.status_code == 401
        fresh = await gw.client.get("/v1/bookmarks/delta", headers=bearer(linked.json()["accessToken"]))
        assert fresh.status_code == 200
