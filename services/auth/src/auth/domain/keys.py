"""Access-token signing keys: PEM parsing, RFC 7638 key ids, the public JWKS; no I/O.

A :class:`KeyRing` signs with ``current`` and publishes ``current`` and ``previous`` so tokens signed
just before a rotation keep verifying until they expire.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from jwt import PyJWK
from jwt.algorithms import OKPAlgorithm, RSAAlgorithm

PrivateKey = rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey

MIN_RSA_BITS = 2048
_THUMBPRINT_MEMBERS = {"RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}


class SigningKeyError(ValueError):
    """A PEM that is not a usable signing key (wrong type, too small, encrypted, garbage)."""


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwk_thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638 SHA-256 thumbprint: the required members, sorted, no whitespace."""
    members = _THUMBPRINT_MEMBERS[jwk["kty"]]
    canonical = json.dumps({m: jwk[m] for m in members}, separators=(",", ":"), sort_keys=True)
    return _b64url(hashlib.sha256(canonical.encode()).digest())


@dataclass(frozen=True, slots=True)
class SigningKey:
    kid: str
    algorithm: str
    private_key: PrivateKey = field(repr=False)
    public_jwk: dict[str, str] = field(repr=False)

    @classmethod
    def from_private_key(cls, private_key: PrivateKey) -> SigningKey:
        if isinstance(private_key, rsa.RSAPrivateKey):
            if private_key.key_size < MIN_RSA_BITS:
                raise SigningKeyError(f"RSA signing keys need at least {MIN_RSA_BITS} bits, got {private_key.key_size}")
            jwk: dict[str, Any] = dict(RSAAlgorithm.to_jwk(private_key.public_key(), as_dict=True))
            algorithm = "RS256"
        else:
            jwk = dict(OKPAlgorithm.to_jwk(private_key.public_key(), as_dict=True))
            algorithm = "EdDSA"
        public = {m: str(jwk[m]) for m in _THUMBPRINT_MEMBERS[jwk["kty"]]}
        kid = jwk_thumbprint(public)
        # `alg` is declared so verifiers pin it to the key (no RS/HS confusion, docs/api-guide.md, section 2).
        public.update(kid=kid, alg=algorithm, use="sig")
        return cls(kid=kid, algorithm=algorithm, private_key=private_key, public_jwk=public)

    @classmethod
    def from_pem(cls, pem: bytes | str) -> SigningKey:
        data = pem.encode() if isinstance(pem, str) else pem
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise SigningKeyError(f"not an unencrypted PEM private key: {exc}") from exc
        if not isinstance(key, rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey):
            raise SigningKeyError(f"signing keys must be RSA or Ed25519, got {type(key).__name__}")
        return cls.from_private_key(key)

    def private_pem(self) -> str:
        return self.private_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()

    def verification_key(self) -> PyJWK:
        return PyJWK(dict(self.public_jwk))


def generate_signing_key() -> SigningKey:
    """A fresh RS256 key (RSA is what every JWT library in the clients' and services' hands verifies)."""
    return SigningKey.from_private_key(rsa.generate_private_key(public_exponent=65537, key_size=MIN_RSA_BITS))


@dataclass(frozen=True, slots=True)
class KeyRing:
    current: SigningKey
    previous: SigningKey | None = None
    _verification: dict[str, PyJWK] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for key in self.published():
            self._verification[key.kid] = key.verification_key()

    def published(self) -> list[SigningKey]:
        keys = [self.current]
        if self.previous is not None and self.previous.kid != self.current.kid:
            keys.append(self.previous)
        return keys

    def jwks(self) -> dict[str, list[dict[str, str]]]:
        return {"keys": [dict(key.public_jwk) for key in self.published()]}

    def verification_key(self, kid: str) -> PyJWK | None:
        return self._verification.get(kid)
