"""Signing keys: created once and kept (local stack), read from files (production), rotated without logouts."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from auth import service
from auth.domain.keys import KeyRing, SigningKey, SigningKeyError, generate_signing_key
from auth.domain.tokens import TokenIssuer
from auth.keys import load_keys_from_dir
from common.db import create_session_factory


def _pem(key: Any) -> bytes:
    return bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )


async def _kids(client: Any) -> list[str]:
    return [k["kid"] for k in (await client.get("/v1/auth/jwks")).json()["keys"]]


async def test_the_first_start_creates_one_key_and_restarts_keep_it(
    infra: Any, make_settings: Any, run_app: Any
) -> None:
    url = infra.fresh_database("auth")
    settings = make_settings(database_url=url)

    async with run_app(settings) as client:
        first = await _kids(client)
        session = (await client.post("/v1/auth/anonymous")).json()
    async with run_app(settings) as client:
        second = await _kids(client)
        # A token issued before the restart still verifies after it.
        me = await client.get("/v1/me", headers={"Authorization": f"Bearer {session['accessToken']}"})

    assert len(first) == 1
    assert second == first
    assert me.status_code == 200
    engine = create_async_engine(url)
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM signing_keys"))).scalar_one() == 1
    await engine.dispose()


async def test_replicas_starting_together_agree_on_one_key(infra: Any) -> None:
    url = infra.fresh_database("auth")
    engines = [create_async_engine(url) for _ in range(4)]
    try:
        rings = await asyncio.gather(
            *(service.load_signing_keys(sessions=create_session_factory(engine)) for engine in engines)
        )
        async with engines[0].connect() as conn:
            stored = (await conn.execute(text("SELECT kid FROM signing_keys"))).scalars().all()
    finally:
        for engine in engines:
            await engine.dispose()

    assert len({ring.current.kid for ring in rings}) == 1
    assert list(stored) == [rings[0].current.kid]


async def test_a_rotation_in_the_database_keeps_old_tokens_valid(infra: Any, make_settings: Any, run_app: Any) -> None:
    url = infra.fresh_database("auth")
    settings = make_settings(database_url=url)
    async with run_app(settings) as client:
        (old_kid,) = await _kids(client)
        session = (await client.post("/v1/auth/anonymous")).json()
    new_key = generate_signing_key()
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.execute(text("UPDATE signing_keys SET retired_at = now()"))
        await conn.execute(
            text(
                "INSERT INTO signing_keys (kid, private_pem, created_at) VALUES (:k, :p, now() + interval '1 second')"
            ),
            {"k": new_key.kid, "p": new_key.private_pem()},
        )
    await engine.dispose()

    async with run_app(settings) as client:
        kids = await _kids(client)
        old_token = await client.get("/v1/me", headers={"Authorization": f"Bearer {session['accessToken']}"})
        fresh = (await client.post("/v1/auth/refresh", json={"refreshToken": session["refreshToken"]})).json()

    assert kids == [new_key.kid, old_kid]
    assert old_token.status_code == 200
    assert jwt.get_unverified_header(fresh["accessToken"])["kid"] == new_key.kid


async def test_keys_from_a_directory_sign_and_verify(tmp_path: Path, make_settings: Any, run_app: Any) -> None:
    current = ed25519.Ed25519PrivateKey.generate()
    previous = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (tmp_path / "current.pem").write_bytes(_pem(current))
    (tmp_path / "previous.pem").write_bytes(_pem(previous))
    current_kid = SigningKey.from_private_key(current).kid
    previous_kid = SigningKey.from_private_key(previous).kid

    async with run_app(make_settings(signing_keys_dir=tmp_path)) as client:
        jwks = (await client.get("/v1/auth/jwks")).json()
        session = (await client.post("/v1/auth/anonymous")).json()
        me = await client.get("/v1/me", headers={"Authorization": f"Bearer {session['accessToken']}"})
        # Tokens a replica signed with the previous key (before it got the new secret) still verify.
        old_issuer = TokenIssuer(
            keys=KeyRing(current=SigningKey.from_private_key(previous)),
            issuer="bookmarks-auth",
            audience="bookmarks-api",
            access_ttl_seconds=900,
            refresh_ttl_seconds=60,
        )
        old_token = old_issuer.access_token(uuid.UUID(session["user"]["id"]))
        with_previous = await client.get("/v1/me", headers={"Authorization": f"Bearer {old_token}"})

    assert [k["kid"] for k in jwks["keys"]] == [current_kid, previous_kid]
    assert [k["alg"] for k in jwks["keys"]] == ["EdDSA", "RS256"]
    assert jwks["keys"][0]["kty"] == "OKP" and jwks["keys"][0]["crv"] == "Ed25519"
    header = jwt.get_unverified_header(session["accessToken"])
    assert (header["alg"], header["kid"]) == ("EdDSA", current_kid)
    assert me.status_code == 200
    assert with_previous.status_code == 200


def test_a_keys_directory_without_current_pem_or_with_bad_keys_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SigningKeyError, match="current.pem"):
        load_keys_from_dir(tmp_path)
    (tmp_path / "current.pem").write_bytes(_pem(ec.generate_private_key(ec.SECP256R1())))
    with pytest.raises(SigningKeyError, match="RSA or Ed25519"):
        load_keys_from_dir(tmp_path)
    (tmp_path / "current.pem").write_bytes(b"-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----\n")
    with pytest.raises(SigningKeyError):
        load_keys_from_dir(tmp_path)
