"""Refresh-token values and hashes; access-token claims."""

from __future__ import annotations

import base64
import uuid

import jwt

from auth.domain.keys import KeyRing, generate_signing_key
from auth.domain.tokens import TokenIssuer, hash_refresh_token, new_refresh_token


def test_refresh_tokens_carry_at_least_256_random_bits() -> None:
    token = new_refresh_token()

    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    assert len(raw) >= 32
    assert new_refresh_token() != token


def test_refresh_token_hash_is_sha256_and_never_the_token() -> None:
    token = new_refresh_token()

    digest = hash_refresh_token(token)

    assert len(digest) == 32
    assert digest == hash_refresh_token(token)
    assert token.encode() not in digest


def test_a_lone_surrogate_hashes_instead_of_crashing() -> None:
    assert len(hash_refresh_token("\ud800")) == 32


def test_access_token_claims() -> None:
    key = generate_signing_key()
    issuer = TokenIssuer(
        keys=KeyRing(current=key), issuer="iss-x", audience="aud-y", access_ttl_seconds=900, refresh_ttl_seconds=60
    )
    user_id = uuid.uuid4()

    token = issuer.access_token(user_id, now=1_800_000_000)

    header = jwt.get_unverified_header(token)
    assert header["kid"] == key.kid and header["alg"] == "RS256"
    claims = jwt.decode(
        token,
        key.private_key.public_key(),
        algorithms=["RS256"],
        audience="aud-y",
        issuer="iss-x",
        options={"verify_exp": False, "verify_iat": False},
    )
    assert claims["sub"] == str(user_id)
    assert (claims["iat"], claims["exp"]) == (1_800_000_000, 1_800_000_900)
    assert len(claims["jti"]) == 32
