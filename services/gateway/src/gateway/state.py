"""The gateway's per-process components, built in the lifespan and shared by every request."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from gateway.denylist import DenyList
from gateway.edge import EdgeAuth
from gateway.openapi import OpenApiCatalog
from gateway.proxy import UpstreamProxy
from gateway.ratelimit import TokenBucketLimiter
from gateway.realtime import CLOSE_UNAUTHORIZED, Hub
from gateway.settings import Settings


@dataclass(slots=True)
class Gateway:
    settings: Settings
    auth: EdgeAuth
    denylist: DenyList
    hub: Hub
    proxy: UpstreamProxy
    catalog: OpenApiCatalog
    user_limiter: TokenBucketLimiter | None
    ip_limiter: TokenBucketLimiter | None
    image_limiter: TokenBucketLimiter | None

    def deny(self, user_id: uuid.UUID, *, since: float | None = None, reason: str) -> None:
        """Refuse ``user_id``'s tokens from now on and close their sockets (deleted or merged away)."""
        if self.denylist.deny(user_id, since=since):
            self.hub.close_user(user_id, CLOSE_UNAUTHORIZED, reason)
