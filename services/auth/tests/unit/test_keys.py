"""Signing keys: RFC 7638 key ids, PEM parsing, what the JWKS publishes."""

from __future__ import annotations

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from auth.domain.keys import KeyRing, SigningKey, SigningKeyError, generate_signing_key, jwk_thumbprint

# RFC 7638, section 3.1: the example key and its thumbprint.
RFC7638_JWK = {
    "kty": "RSA",
    "n": (
        "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMs"
        "tn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5"
        "hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
    ),
    "e": "AQAB",
    "alg": "RS256",
    "kid": "2011-04-29",
}


def test_thumbprint_matches_rfc7638_example() -> None:
    assert jwk_thumbprint(RFC7638_JWK) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


def test_kid_is_the_thumbprint_of_the_public_key() -> None:
    key = generate_signing_key()

    assert key.kid == jwk_thumbprint(key.public_jwk)
    assert key.algorithm == "RS256"
    assert key.public_jwk["alg"] == "RS256" and key.public_jwk["use"] == "sig"


def test_pem_round_trip_keeps_the_kid() -> None:
    key = generate_signing_key()

    assert SigningKey.from_pem(key.private_pem()).kid == key.kid


def test_ed25519_keys_sign_with_eddsa() -> None:
    private = ed25519.Ed25519PrivateKey.generate()
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )

    key = SigningKey.from_pem(pem)

    assert key.algorithm == "EdDSA"
    assert set(key.public_jwk) == {"kty", "crv", "x", "kid", "alg", "use"}


def test_weak_or_unusable_keys_are_refused() -> None:
    small = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    with pytest.raises(SigningKeyError, match="2048"):
        SigningKey.from_private_key(small)
    with pytest.raises(SigningKeyError):
        SigningKey.from_pem("not a pem")
    encrypted = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    with pytest.raises(SigningKeyError):
        SigningKey.from_pem(encrypted)


def test_jwks_publishes_current_then_previous_and_no_private_members() -> None:
    current, previous = generate_signing_key(), generate_signing_key()

    jwks = KeyRing(current=current, previous=previous).jwks()

    assert [k["kid"] for k in jwks["keys"]] == [current.kid, previous.kid]
    for jwk in jwks["keys"]:
        assert set(jwk) == {"kty", "n", "e", "kid", "alg", "use"}


def test_a_previous_key_equal_to_the_current_one_is_published_once() -> None:
    key = generate_signing_key()

    assert len(KeyRing(current=key, previous=key).jwks()["keys"]) == 1


def test_verification_keys_verify_what_the_private_key_signed() -> None:
    key = generate_signing_key()
    ring = KeyRing(current=key)
    token = jwt.encode({"sub": "x"}, key.private_key, algorithm="RS256")

    public = ring.verification_key(key.kid)

    assert public is not None
    assert jwt.decode(token, public.key, algorithms=["RS256"])["sub"] == "x"
    assert ring.verification_key("unknown") is None
