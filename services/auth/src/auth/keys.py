"""Where the access-token signing keys come from, and how the service verifies its own tokens.

Production mounts ``current.pem`` (and during a rotation ``previous.pem``) into
``AUTH_SIGNING_KEYS_DIR``; the local stack keeps generated keys in the database instead
(:func:`auth.service.load_signing_keys`).
"""

from __future__ import annotations

from pathlib import Path

from jwt import PyJWK

from auth.domain.keys import KeyRing, SigningKey, SigningKeyError
from common.jwt import JwksClient, TokenError


def load_keys_from_dir(directory: Path) -> KeyRing:
    """``current.pem`` signs; ``previous.pem``, when present, still verifies."""
    current_path = directory / "current.pem"
    if not current_path.is_file():
        raise SigningKeyError(f"AUTH_SIGNING_KEYS_DIR={directory} has no current.pem")
    current = SigningKey.from_pem(current_path.read_bytes())
    previous_path = directory / "previous.pem"
    previous = SigningKey.from_pem(previous_path.read_bytes()) if previous_path.is_file() else None
    return KeyRing(current=current, previous=previous)


class LocalJwks(JwksClient):
    """The key ring behind :class:`common.auth.AccessTokenVerifier`, so auth verifies its own tokens
    with the exact rules every other service applies, without an HTTP call to itself."""

    def __init__(self, keys: KeyRing) -> None:
        super().__init__("local:")
        self.ring = keys

    async def get_key(self, kid: str) -> PyJWK:
        key = self.ring.verification_key(kid)
        if key is None:
            raise TokenError(f"unknown kid {kid!r}")
        return key
