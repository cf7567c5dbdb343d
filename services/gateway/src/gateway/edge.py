"""Who is calling: access-token verification at the edge (with the deny-list) and the client address."""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable

from starlette.types import Scope

from common.auth import AccessTokenVerifier, Principal, bearer_token
from common.errors import Unauthorized
from gateway.denylist import DenyList

# A verified token is remembered briefly so a busy client does not pay an RSA verification per request;
# expiry and the deny-list are still checked on every use. Bounded so a key-rotation outage is short.
_CACHE_SECONDS = 60.0
_CACHE_SIZE = 20_000


class EdgeAuth:
    def __init__(
        self,
        verifier: AccessTokenVerifier,
        denylist: DenyList,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.verifier = verifier
        self.denylist = denylist
        self._clock = clock
        self._cache: OrderedDict[bytes, tuple[Principal, float]] = OrderedDict()

    async def authenticate_header(self, authorization: str | None) -> Principal:
        return await self.authenticate(bearer_token(authorization))

    async def authenticate(self, token: str) -> Principal:
        """The token's principal, or :class:`Unauthorized` (bad, expired, or a deleted/merged user)."""
        now = self._clock()
        key = hashlib.sha256(token.encode()).digest()
        cached = self._cache.get(key)
        if cached is not None and cached[1] > now:
            principal = cached[0]
            self._cache.move_to_end(key)
        else:
            principal = await self.verifier.verify(token)
            self._cache[key] = (principal, now + _CACHE_SECONDS)
            if len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        if principal.expires_at <= now:
            raise Unauthorized("The access token has expired.")
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
