"""Anonymous sessions, access tokens, refresh rotation (reuse, families, races), logout and JWKS."""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from datetime import timedelta
from typing import Any

import jwt
from sqlalchemy import text

from auth.main import create_app
from devstack.testing import eventually

USER_KEYS = {"id", "isAnonymous", "displayName", "email", "photoUrl", "isPro"}


async def test_anonymous_returns_a_session_of_a_fresh_anonymous_user(api: Any, app: Any) -> None:
    response = await api.client.post("/v1/auth/anonymous")

    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert set(body) == {"accessToken", "refreshToken", "user"}
    user = body["user"]
    assert set(user) == USER_KEYS
    assert user["isAnonymous"] is True
    assert user["displayName"] is None and user["email"] is None and user["photoUrl"] is None
    assert user["isPro"] is False
    uuid.UUID(user["id"])
    assert len(body["refreshToken"]) >= 43  # 256 random bits, base64url


async def test_anonymous_ignores_a_body(api: Any) -> None:
    response = await api.client.post("/v1/auth/anonymous", content=b"{not json", headers={"content-type": "text/plain"})

    assert response.status_code == 200


async def test_access_token_is_an_rs256_jwt_with_the_contract_claims(api: Any, app: Any) -> None:
    session = await api.anonymous()
    jwks = (await api.client.get("/v1/auth/jwks")).json()

    header = jwt.get_unverified_header(session["accessToken"])
    assert header["alg"] == "RS256"
    current = next(k for k in jwks["keys"] if k["kid"] == header["kid"])
    claims = jwt.decode(
        session["accessToken"],
        key=jwt.PyJWK(current).key,
        algorithms=["RS256"],
        audience="bookmarks-api",
        issuer="bookmarks-auth",
    )
    assert claims["sub"] == session["user"]["id"]
    assert claims["exp"] - claims["iat"] == 900
    assert set(claims) == {"iss", "aud", "sub", "iat", "exp", "jti"}


async def test_every_session_gets_its_own_token_id(api: Any) -> None:
    first, second = await api.anonymous(), await api.anonymous()

    jti = [jwt.decode(s["accessToken"], options={"verify_signature": False})["jti"] for s in (first, second)]
    assert jti[0] != jti[1]
    assert first["refreshToken"] != second["refreshToken"]


async def test_me_returns_the_user_without_envelope(api: Any) -> None:
    session = await api.anonymous()

    response = await api.me(session["accessToken"])

    assert response.status_code == 200
    assert response.json() == session["user"]


async def test_me_without_or_with_a_malformed_authorization_is_unauthorized(api: Any) -> None:
    for headers in (
        {},
        {"Authorization": "Basic abc"},
        {"Authorization": "Bearer "},
        {"Authorization": "Bearer x.y.z"},
    ):
        response = await api.client.get("/v1/me", headers=headers)

        assert response.status_code == 401, headers
        assert response.json()["code"] == "unauthorized"
        assert response.headers["www-authenticate"] == "Bearer"


async def test_jwks_publishes_public_keys_only_with_a_short_cache(api: Any) -> None:
    response = await api.client.get("/v1/auth/jwks")

    assert response.status_code == 200
    assert response.headers["cache-control"] == "public, max-age=60"
    keys = response.json()["keys"]
    assert keys
    for key in keys:
        assert key["use"] == "sig" and key["alg"] in ("RS256", "EdDSA") and key["kid"]
        assert not {"d", "p", "q", "dp", "dq", "qi"} & set(key), "private members must never be published"


async def test_refresh_rotates_the_pair_and_returns_the_user(api: Any) -> None:
    session = await api.anonymous()

    response = await api.refresh(session["refreshToken"])

    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    rotated = response.json()
    assert set(rotated) == {"accessToken", "refreshToken", "user"}
    assert rotated["user"] == session["user"]
    assert rotated["refreshToken"] != session["refreshToken"]
    assert rotated["accessToken"] != session["accessToken"]
    assert (await api.me(rotated["accessToken"])).status_code == 200
    # ...and the new refresh token is itself good for one rotation.
    assert (await api.refresh(rotated["refreshToken"])).status_code == 200


async def test_a_used_refresh_token_is_rejected(api: Any) -> None:
    session = await api.anonymous()
    assert (await api.refresh(session["refreshToken"])).status_code == 200

    again = await api.refresh(session["refreshToken"])

    assert again.status_code == 401
    assert again.json()["code"] == "invalid-refresh-token"


async def test_reuse_after_the_victim_rotated_kills_the_whole_family(api: Any) -> None:
    """A thief replays a stolen token after the victim rotated it: both lose every later token."""
    victim = await api.anonymous()
    stolen = victim["refreshToken"]
    victim_next = (await api.refresh(stolen)).json()

    thief = await api.refresh(stolen)

    assert thief.status_code == 401
    assert thief.json()["code"] == "invalid-refresh-token"
    after = await api.refresh(victim_next["refreshToken"])
    assert after.status_code == 401
    assert after.json()["code"] == "invalid-refresh-token"


async def test_reuse_by_the_thief_after_rotating_first_kills_the_thiefs_tokens(api: Any) -> None:
    victim = await api.anonymous()
    thief_next = (await api.refresh(victim["refreshToken"])).json()

    assert (await api.refresh(victim["refreshToken"])).status_code == 401  # the victim's attempt: reuse

    assert (await api.refresh(thief_next["refreshToken"])).status_code == 401


async def test_family_revocation_spares_other_sessions_of_the_same_user(api: Any) -> None:
    first = await api.anonymous()
    other_device = (await api.refresh(first["refreshToken"])).json()
    # A second sign-in of the same user: the identity route gives a second family.
    id_token = api.id_token_a()
    device_a = (await api.sign_in_a(id_token)).json()
    device_b = (await api.sign_in_a(id_token)).json()
    assert device_a["user"]["id"] == device_b["user"]["id"]
    rotated_a = (await api.refresh(device_a["refreshToken"])).json()

    assert (await api.refresh(device_a["refreshToken"])).status_code == 401  # reuse in family A

    assert (await api.refresh(rotated_a["refreshToken"])).status_code == 401
    assert (await api.refresh(device_b["refreshToken"])).status_code == 200
    assert (await api.refresh(other_device["refreshToken"])).status_code == 200


async def test_concurrent_refreshes_of_one_token_succeed_exactly_once(api: Any) -> None:
    session = await api.anonymous()

    responses = await asyncio.gather(api.refresh(session["refreshToken"]), api.refresh(session["refreshToken"]))

    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200, 401]
    loser = next(r for r in responses if r.status_code == 401)
    assert loser.json()["code"] == "invalid-refresh-token"
    # The loser presented an already-used token: that is reuse, so the winner's new token dies too.
    winner = next(r for r in responses if r.status_code == 200).json()
    assert (await api.refresh(winner["refreshToken"])).status_code == 401


async def test_many_concurrent_refreshes_of_one_token_succeed_exactly_once(api: Any) -> None:
    session = await api.anonymous()

    responses = await asyncio.gather(*(api.refresh(session["refreshToken"]) for _ in range(6)))

    assert sorted(r.status_code for r in responses) == [200] + [401] * 5
    assert all(r.json()["code"] == "invalid-refresh-token" for r in responses if r.status_code == 401)


async def test_each_rotation_gets_a_fresh_full_lifetime(api: Any) -> None:
    session = await api.anonymous()
    rotated = (await api.refresh(session["refreshToken"])).json()

    async with api.db.connect() as conn:
        lifetimes = (
            (
                await conn.execute(
                    text("SELECT expires_at - created_at FROM refresh_tokens WHERE token_hash = ANY(:h)"),
                    {
                        "h": [
                            hashlib.sha256(t.encode()).digest()
                            for t in (session["refreshToken"], rotated["refreshToken"])
                        ]
                    },
                )
            )
            .scalars()
            .all()
        )

    assert lifetimes == [timedelta(seconds=2_592_000)] * 2


async def test_an_expired_refresh_token_is_rejected(api: Any) -> None:
    session = await api.anonymous()
    async with api.db.begin() as conn:
        await conn.execute(
            text("UPDATE refresh_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = :h"),
            {"h": hashlib.sha256(session["refreshToken"].encode()).digest()},
        )

    response = await api.refresh(session["refreshToken"])

    assert response.status_code == 401
    assert response.json()["code"] == "invalid-refresh-token"


async def test_unknown_and_garbage_refresh_tokens_are_rejected_and_change_nothing(api: Any) -> None:
    before = await api.table_counts()
    tokens = ["", "x", "not-a-token" * 50, "🙂", str(uuid.uuid4()), "a" * 43, "' OR 1=1 --"]
    bodies = [json.dumps({"refreshToken": t}).encode() for t in tokens]
    for body in bodies:
        response = await api.client.post("/v1/auth/refresh", content=body, headers={"content-type": "application/json"})

        assert response.status_code == 401, body
        assert response.json() == {
            "code": "invalid-refresh-token",
            "message": "The refresh token is unknown, expired, revoked or already used.",
        }
    # A lone surrogate (valid JSON, not UTF-8) or a NUL is text no service stores: the field is invalid.
    for body in (b'{"refreshToken": "\\ud800"}', b'{"refreshToken": "a\\u0000b"}'):
        response = await api.client.post("/v1/auth/refresh", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 400, body
        assert response.json()["code"] == "invalid-request"
        assert "refreshToken" in response.json()["message"]
    assert await api.table_counts() == before


async def test_refresh_with_missing_or_ill_typed_field_is_invalid_request(api: Any) -> None:
    for body in ({}, {"refreshToken": None}, {"refreshToken": 123}, {"refreshToken": ["a"]}, {"token": "x"}, [], "x"):
        response = await api.client.post("/v1/auth/refresh", json=body)

        assert response.status_code == 400, body
        payload = response.json()
        assert payload["code"] == "invalid-request"
        assert isinstance(payload["message"], str) and payload["message"]
    missing = await api.client.post("/v1/auth/refresh", json={})
    assert "refreshToken" in missing.json()["message"]


async def test_logout_revokes_the_family_and_leaves_the_access_token(api: Any) -> None:
    session = await api.anonymous()
    rotated = (await api.refresh(session["refreshToken"])).json()

    # Logging out with an older token of the family still ends the session.
    response = await api.client.post("/v1/auth/logout", json={"refreshToken": session["refreshToken"]})

    assert response.status_code == 204
    assert response.content == b""
    refused = await api.refresh(rotated["refreshToken"])
    assert refused.status_code == 401
    assert refused.json()["code"] == "invalid-refresh-token"
    # Logout revokes refresh tokens only; the access token lives until it expires.
    assert (await api.me(rotated["accessToken"])).status_code == 200


async def test_logout_answers_204_for_unknown_and_repeated_tokens(api: Any) -> None:
    session = await api.anonymous()
    for token in ("unknown", "", session["refreshToken"], session["refreshToken"]):
        response = await api.client.post("/v1/auth/logout", json={"refreshToken": token})

        assert response.status_code == 204, token


async def test_logout_with_missing_or_ill_typed_field_is_invalid_request(api: Any) -> None:
    for body in ({}, {"refreshToken": 5}, {"refreshToken": None}):
        response = await api.client.post("/v1/auth/logout", json=body)

        assert response.status_code == 400
        assert response.json()["code"] == "invalid-request"
    malformed = await api.client.post(
        "/v1/auth/logout", content=b'{"refreshToken": ', headers={"content-type": "application/json"}
    )
    assert malformed.status_code == 400
    assert malformed.json() == {"code": "invalid-request", "message": "The request body is not valid JSON."}


async def test_anonymous_sign_up_is_rate_limited_per_client_address(make_settings: Any, run_app: Any) -> None:
    async with run_app(make_settings(anonymous_rate_limit_per_minute=3)) as client:
        before = await asyncio.gather(*(client.post("/v1/auth/anonymous") for _ in range(3)))
        limited = await client.post("/v1/auth/anonymous")
        # The gateway determines the client once and passes it in X-Client-IP (always overwritten there);
        # X-Forwarded-For (whose rightmost entry behind an ingress is the ingress) is not what counts.
        other_client = await client.post("/v1/auth/anonymous", headers={"X-Client-IP": "203.0.113.9"})
        forged = [
            await client.post(
                "/v1/auth/anonymous",
                headers={"X-Client-IP": "203.0.113.7", "X-Forwarded-For": f"198.51.100.{i}"},
            )
            for i in range(4)
        ]

    assert [r.status_code for r in before] == [200, 200, 200]
    assert limited.status_code == 429
    assert limited.json()["code"] == "rate-limited"
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    assert other_client.status_code == 200
    assert [r.status_code for r in forged] == [200, 200, 200, 429]


async def test_a_limit_of_zero_turns_the_rate_limit_off(api: Any) -> None:
    responses = await asyncio.gather(*(api.client.post("/v1/auth/anonymous") for _ in range(25)))

    assert {r.status_code for r in responses} == {200}


async def test_unknown_routes_and_methods_use_the_error_model(api: Any) -> None:
    missing = await api.client.get("/v1/auth/nothing")
    wrong_method = await api.client.get("/v1/auth/refresh")

    assert missing.status_code == 404 and missing.json()["code"] == "not-found"
    assert wrong_method.status_code == 405 and wrong_method.json()["code"] == "method-not-allowed"


async def test_health_and_readiness(api: Any) -> None:
    assert (await api.client.get("/healthz")).status_code == 200

    async def ready() -> bool:
        return (await api.client.get("/readyz")).status_code == 200

    # Ready once the database answers and its topics were found on the broker (one metadata request).
    assert await eventually(ready, timeout=60)


def test_app_factory_builds_nothing_at_import(make_settings: Any) -> None:
    app = create_app(make_settings())

    assert not hasattr(app.state, "sessions")
