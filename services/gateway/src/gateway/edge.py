"""Who is calling: access-token verification at the edge (with the deny-list) and the client address."""

from __future__ import annotations

from starlette.types import Scope

from common.auth import AccessTokenVerifier, Principal, bearer_token
from common.errors import Unauthorized
from gateway.denylist import DenyList


class EdgeAuth:
    def __init__(self, verifier: AccessTokenVerifier, denylist: DenyList) -> None:
        self.verifier = verifier  # remembers verified tokens briefly; expiry is checked on every use
        self.denylist = denylist

    async def authenticate_header(self, authorization: str | None) -> Principal:
        return await self.authenticate(bearer_token(authorization))

    async def authenticate(self, token: str) -> Principal:
        """The token's principal, or :class:`Unauthorized` (bad, expired, or a deleted/merged user)."""
        principal = await self.verifier.verify(token)
        if self.denylist.is_denied(principal.user_id):
            raise Unauthorized("The account of this access token no longer exists.")
        return principal


def client_ip(scope: Scope, trusted_proxy_hops: int) -> str:
    """The caller's address: the socket peer, or the X-Forwarded-For entry left by the first trusted proxy."""
    client = scope.get("client")
    peer = str(client[0]) if client else "unknown"
    if trusted_proxy_hops <= 0:
        return peer
    chain: list[str] = []
    for key, value in scope.get("headers", ()):
        if key == b"x-forwarded-for":
            chain.extend(part.strip() for part in value.decode("latin-1").split(",") if part.strip())
    chain.append(peer)
    # The last `trusted_proxy_hops` addresses of the chain are our own proxies; the one before is the client.
    index = len(chain) - 1 - trusted_proxy_hops
    return chain[max(index, 0)]
