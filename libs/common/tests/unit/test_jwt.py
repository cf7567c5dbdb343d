"""JWT verification: pinned asymmetric algorithms, issuer/audience/expiry, kid rotation."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator

import jwt as pyjwt
import pytest
from cryptography.hazmat.primitives import serialization

from common.errors import Unauthorized
from common.jwt import JwksClient, TokenError, verify_jwt
from devstack.testing import LocalJwksServer

ISS, AUD = "https://idp.test", "test-client"


@pytest.fixture
def idp() -> Iterator[LocalJwksServer]:
    server = LocalJwksServer(issuer=ISS, audience=AUD).start()
    yield server
    server.stop()


async def verify(idp: LocalJwksServer, token: str, **kw: object) -> dict[str, object]:
    return await verify_jwt(token, jwks=JwksClient(idp.jwks_url, min_refetch_seconds=0), issuer=ISS, audience=AUD, **kw)  # type: ignore[arg-type]


async def test_valid_rs256_and_es256_tokens(idp: LocalJwksServer) -> None:
    assert (await verify(idp, idp.mint(sub="u1")))["sub"] == "u1"
    assert (await verify(idp, idp.mint(sub="u2", algorithm="ES256")))["sub"] == "u2"


def _b64(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


async def test_alg_none_is_refused(idp: LocalJwksServer) -> None:
    now = int(time.time())
    token = f"{_b64({'alg': 'none', 'kid': idp.rsa_kid})}.{_b64({'sub': 'x', 'iss': ISS, 'aud': AUD, 'exp': now + 60, 'iat': now})}."
    with pytest.raises(TokenError, match="not allowed"):
        await verify(idp, token)


async def test_hs256_signed_with_the_public_key_is_refused(idp: LocalJwksServer) -> None:
    public_pem = idp.rsa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    now = int(time.time())
    claims = {"sub": "x", "iss": ISS, "aud": AUD, "exp": now + 60, "iat": now}
    header = {"alg": "HS256", "kid": idp.rsa_kid, "typ": "JWT"}
    signing_input = f"{_b64(header)}.{_b64(claims)}".encode()
    import hashlib
    import hmac

    signature = base64.urlsafe_b64encode(hmac.new(public_pem, signing_input, hashlib.sha256).digest()).rstrip(b"=")
    token = f"{signing_input.decode()}.{signature.decode()}"
    with pytest.raises(TokenError):
        await verify(idp, token)


async def test_algorithm_must_match_the_key_type(idp: LocalJwksServer) -> None:
    # An RS256 token presented under the EC key's kid.
    token = pyjwt.encode(
        {"sub": "x", "iss": ISS, "aud": AUD, "exp": int(time.time()) + 60, "iat": int(time.time())},
        idp.rsa_key,
        algorithm="RS256",
        headers={"kid": idp.ec_kid},
    )
    with pytest.raises(TokenError, match="does not match"):
        await verify(idp, token)


@pytest.mark.parametrize(
    ("claims", "expires_in", "match"),
    [
        ({"aud": "someone-else"}, 600, "(?i)audience"),
        ({"iss": "https://evil.test"}, 600, "(?i)issuer"),
        ({}, -120, "expired"),
        ({"nbf": int(time.time()) + 3600}, 600, "not yet valid"),
    ],
)
async def test_claims_are_checked(idp: LocalJwksServer, claims: dict[str, object], expires_in: int, match: str) -> None:
    with pytest.raises(TokenError, match=match):
        await verify(idp, idp.mint(claims=claims, expires_in=expires_in))


async def test_leeway_accepts_small_clock_skew(idp: LocalJwksServer) -> None:
    token = idp.mint(expires_in=-30)
    assert await verify(idp, token, leeway_seconds=60)


async def test_unknown_kid_triggers_a_refetch_so_rotation_needs_no_restart(idp: LocalJwksServer) -> None:
    client = JwksClient(idp.jwks_url, min_refetch_seconds=0)
    assert await verify_jwt(idp.mint(), jwks=client, issuer=ISS, audience=AUD)
    from cryptography.hazmat.primitives.asymmetric import rsa

    idp.rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    idp.rsa_kid = "rotated"
    assert await verify_jwt(idp.mint(), jwks=client, issuer=ISS, audience=AUD)
    with pytest.raises(TokenError, match="unknown kid"):
        bad = pyjwt.encode({"sub": "x"}, idp.rsa_key, algorithm="RS256", headers={"kid": "never"})
        await verify_jwt(bad, jwks=client, issuer=ISS, audience=AUD)


async def test_garbage(idp: LocalJwksServer) -> None:
    for token in ["", "abc", "a.b.c", "eyJhbGciOiJSUzI1NiJ9.e30."]:
        with pytest.raises(TokenError):
            await verify(idp, token)


async def test_an_unreachable_jwks_is_an_outage_not_a_bad_token() -> None:
    from common.auth import AccessTokenVerifier
    from common.errors import Unavailable
    from devstack.testing import free_port

    dead = JwksClient(f"http://127.0.0.1:{free_port()}/v1/auth/jwks", timeout_seconds=0.5)
    token = pyjwt.encode({"sub": "x"}, "k" * 32, algorithm="HS256", headers={"kid": "k1"})
    verifier = AccessTokenVerifier(jwks=dead, issuer=ISS, audience=AUD)
    with pytest.raises(Unauthorized):  # refused before any key is needed: HS256 is never allowed
        await verifier.verify(token)
    rs_token = pyjwt.encode({"sub": "x"}, _throwaway_rsa(), algorithm="RS256", headers={"kid": "k1"})
    with pytest.raises(Unavailable):
        await verifier.verify(rs_token)


def _throwaway_rsa() -> object:
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


async def test_non_string_alg_or_kid_is_a_token_error(idp: LocalJwksServer) -> None:
    tokens = idp.hostile_header_tokens(sub="u1")
    assert len(tokens) == 11
    for name, token in tokens.items():
        with pytest.raises(TokenError):
            await verify(idp, token)
            pytest.fail(f"{name} was accepted")
    # The forging helper itself signs correctly: a string alg and kid pass.
    assert (await verify(idp, idp.forge({"alg": "RS256", "kid": idp.rsa_kid}, sub="u1")))["sub"] == "u1"


async def test_a_verified_token_is_remembered_for_a_minute_but_its_expiry_is_checked_on_every_use(
    idp: LocalJwksServer,
) -> None:
    import uuid

    from common.auth import VERIFIED_CACHE_SECONDS, AccessTokenVerifier

    now = [time.time()]
    signatures_checked = []

    class Counting(AccessTokenVerifier):
        async def _verify_signed(self, token: str):  # type: ignore[no-untyped-def]
            signatures_checked.append(token)
            return await super()._verify_signed(token)

    verifier = Counting(jwks=JwksClient(idp.jwks_url), issuer=ISS, audience=AUD, clock=lambda: now[0])
    token = idp.mint(sub=str(uuid.uuid4()), claims={"jti": "t1"}, expires_in=300)
    first = await verifier.verify(token)
    assert await verifier.verify(token) == first
    assert len(signatures_checked) == 1
    now[0] += VERIFIED_CACHE_SECONDS + 1  # remembered no longer: verified again
    assert await verifier.verify(token) == first
    assert len(signatures_checked) == 2
    now[0] = first.expires_at  # still remembered, but expired
    with pytest.raises(Unauthorized):
        await verifier.verify(token)
