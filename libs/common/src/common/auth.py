"""Access-token verification for services (the gateway verifies too; services do not trust it blindly)."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request

from common.errors import Unauthorized, Unavailable
from common.jwt import JwksClient, JwksUnavailable, TokenError, verify_jwt

ACCESS_TOKEN_ALGORITHMS = ("RS256", "EdDSA")


@dataclass(frozen=True, slots=True)
class Principal:
    user_id: uuid.UUID
    token_id: str
    expires_at: int


# A verified token is remembered briefly so a busy client does not pay a signature verification per
# request (it was 7 % of the bookmarks service's CPU per write); expiry is still checked on every use.
# Bounded in time so a signing key withdrawn from the JWKS stops being honoured within a minute, and in
# size so a flood of distinct valid tokens cannot grow memory. Keys are SHA-256 digests, not tokens.
VERIFIED_CACHE_SECONDS = 60.0
VERIFIED_CACHE_SIZE = 20_000


class AccessTokenVerifier:
    def __init__(self, *, jwks: JwksClient, issuer: str, audience: str, clock: Callable[[], float] = time.time) -> None:
        self.jwks = jwks
        self.issuer = issuer
        self.audience = audience
        self._clock = clock
        self._verified: OrderedDict[bytes, tuple[Principal, float]] = OrderedDict()

    async def verify(self, token: str) -> Principal:
        """The token's principal; :class:`Unauthorized` if it is invalid or expired."""
        now = self._clock()
        key = hashlib.sha256(token.encode()).digest()
        cached = self._verified.get(key)
        if cached is not None and cached[1] > now:
            principal = cached[0]
            self._verified.move_to_end(key)
        else:
            principal = await self._verify_signed(token)
            self._verified[key] = (principal, now + VERIFIED_CACHE_SECONDS)
            if len(self._verified) > VERIFIED_CACHE_SIZE:
                self._verified.popitem(last=False)
        if principal.expires_at <= now:
            raise Unauthorized("The access token is invalid or expired.")
        return principal

    async def _verify_signed(self, token: str) -> Principal:
        try:
            claims = await verify_jwt(
                token,
                jwks=self.jwks,
                issuer=self.issuer,
                audience=self.audience,
                algorithms=ACCESS_TOKEN_ALGORITHMS,
                required_claims=("exp", "iat", "sub", "jti", "iss", "aud"),
            )
            return Principal(
                user_id=uuid.UUID(str(claims["sub"])), token_id=str(claims["jti"]), expires_at=int(claims["exp"])
            )
        except JwksUnavailable as exc:
            # Our own auth service is unreachable: a dependency outage, not the caller's fault.
            raise Unavailable("Access tokens cannot be verified right now; try again shortly.") from exc
        except (TokenError, ValueError) as exc:
            raise Unauthorized("The access token is invalid or expired.") from exc

    async def from_request(self, request: Request) -> Principal:
        token = bearer_token(request.headers.get("authorization"))
        principal = await self.verify(token)
        request.state.user_id = str(principal.user_id)
        return principal


def bearer_token(header: str | None) -> str:
    if not header:
        raise Unauthorized("Missing Authorization: Bearer header.")
    scheme, _, token = header.strip(" \t").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("Authorization header must be 'Bearer <token>'.")
    return token.strip()


async def current_principal(request: Request) -> Principal:
    """FastAPI dependency: the verified caller (the app's lifespan puts a verifier in ``app.state``)."""
    verifier: AccessTokenVerifier = request.app.state.verifier
    return await verifier.from_request(request)
