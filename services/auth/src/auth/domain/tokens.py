"""Access tokens (signed JWTs) and refresh tokens (opaque, stored only as a hash); no I/O."""

from __future__ import annotations

import hashlib
import secrets
import time
import uuid
from dataclasses import dataclass

import jwt

from auth.domain.keys import KeyRing

# 32 bytes = 256 random bits (docs/api-guide.md, section 2).
REFRESH_TOKEN_BYTES = 32


def new_refresh_token() -> str:
    return secrets.token_urlsafe(REFRESH_TOKEN_BYTES)


def hash_refresh_token(token: str) -> bytes:
    """The stored form of a refresh token.

    A plain SHA-256 is enough (no salt, no slow hash): the input has 256 random bits, so there is no
    dictionary to precompute, and a leaked table yields nothing a client could present.
    ``surrogatepass``: JSON may carry a lone surrogate; it must hash to "unknown", not crash.
    """
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


@dataclass(frozen=True, slots=True)
class TokenIssuer:
    keys: KeyRing
    issuer: str
    audience: str
    access_ttl_seconds: int
    refresh_ttl_seconds: int

    def access_token(self, user_id: uuid.UUID, *, now: int | None = None) -> str:
        """A JWT for ``user_id`` signed with the current key (claims of docs/api-guide.md, section 2)."""
        issued_at = int(time.time()) if now is None else now
        key = self.keys.current
        claims = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": str(user_id),
            "iat": issued_at,
            "exp": issued_at + self.access_ttl_seconds,
            "jti": uuid.uuid4().hex,
        }
        return jwt.encode(claims, key.private_key, algorithm=key.algorithm, headers={"kid": key.kid})
