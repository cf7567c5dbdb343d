"""Forged, confused and misdirected access tokens never authenticate (docs/api-guide.md, section 2)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _hs256_with_public_key_as_secret(claims: dict[str, Any], kid: str, public_pem: bytes) -> str:
    """The classic RS/HS confusion: HMAC "signed" with the verifier's public key (PyJWT refuses to build it)."""
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    payload = _b64(json.dumps(claims).encode())
    signature = hmac.new(public_pem, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{_b64(signature)}"


def _signed_with_header(claims: dict[str, Any], header: dict[str, Any], key: Any) -> str:
    """Correctly signed with our own key, under a header PyJWT refuses to write (non-string alg/kid)."""
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}".encode()
    signature = jwt.get_algorithm_by_name(key.algorithm).sign(signing_input, key.private_key)
    return f"{signing_input.decode()}.{_b64(signature)}"


async def test_forged_and_misdirected_access_tokens_are_unauthorized_and_change_nothing(api: Any, app: Any) -> None:
    victim = await api.anonymous()
    victim_id = victim["user"]["id"]
    key = app.state.tokens.keys.current
    now = int(time.time())
    claims = {
        "iss": "bookmarks-auth",
        "aud": "bookmarks-api",
        "sub": victim_id,
        "iat": now,
        "exp": now + 600,
        "jti": uuid.uuid4().hex,
    }

    def signed(**changes: Any) -> str:
        body = {k: v for k, v in {**claims, **changes}.items() if v is not None}
        return jwt.encode(body, key.private_key, algorithm=key.algorithm, headers={"kid": key.kid})

    public_pem = key.private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    hostile = {
        "alg none": jwt.encode(claims, None, algorithm="none", headers={"kid": key.kid}),
        "HS256 with the public key as secret": _hs256_with_public_key_as_secret(claims, key.kid, public_pem),
        "another audience": signed(aud="another-api"),
        "another issuer": signed(iss="https://evil.test"),
        "expired": signed(iat=now - 3600, exp=now - 60),
        "no jti": signed(jti=None),
        "no exp": signed(exp=None),
        "subject not a user id": signed(sub="admin"),
        "stranger's key with our kid": jwt.encode(claims, stranger, algorithm="RS256", headers={"kid": key.kid}),
        "EdDSA header on an RSA kid": jwt.encode(
            claims, ed25519.Ed25519PrivateKey.generate(), algorithm="EdDSA", headers={"kid": key.kid}
        ),
        "unknown kid": jwt.encode(claims, key.private_key, algorithm="RS256", headers={"kid": "other"}),
        "tampered payload": victim["accessToken"].split(".")[0]
        + "."
        + _b64(json.dumps({**claims, "sub": str(uuid.uuid4())}).encode())
        + "."
        + victim["accessToken"].split(".")[2],
    }
    for odd_name, odd in (("number", 7), ("list", [key.algorithm]), ("object", {}), ("null", None)):
        hostile[f"alg {odd_name}"] = _signed_with_header(claims, {"alg": odd, "kid": key.kid}, key)
        hostile[f"kid {odd_name}"] = _signed_with_header(claims, {"alg": key.algorithm, "kid": odd}, key)
    hostile["kid list of our kid"] = _signed_with_header(claims, {"alg": key.algorithm, "kid": [key.kid]}, key)
    before = await api.table_counts()

    for name, token in hostile.items():
        for method, path, body in (
            ("GET", "/v1/me", None),
            ("PATCH", "/v1/me/settings", {"useAi": True}),
            ("DELETE", "/v1/account", None),
        ):
            response = await api.client.request(method, path, json=body, headers=api.bearer(token))

            assert response.status_code == 401, (name, path)
            assert response.json() == {"code": "unauthorized", "message": "The access token is invalid or expired."}
            assert response.headers["www-authenticate"] == "Bearer"

    assert await api.table_counts() == before
    assert (await api.me(victim["accessToken"])).status_code == 200
    settings = await api.client.get("/v1/me/settings", headers=api.bearer(victim["accessToken"]))
    assert settings.json() == {"useAi": False}


async def test_a_correctly_signed_token_for_a_user_that_never_existed_is_unauthorized(api: Any, app: Any) -> None:
    token = app.state.tokens.access_token(uuid.uuid4())

    response = await api.me(token)

    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"
