"""The caller's address as the gateway determined it, passed to the services in one header.

The gateway works it out once, from the socket peer and ``GATEWAY_TRUSTED_PROXY_HOPS`` entries of
``X-Forwarded-For``, and always overwrites :data:`CLIENT_ADDRESS_HEADER` with it (a client's own copy
never passes). Services behind it use that header and nothing else (``X-Forwarded-For`` left of the
trusted hops is written by the client).
"""

from __future__ import annotations

from starlette.requests import Request

CLIENT_ADDRESS_HEADER = "x-client-ip"


def client_address(request: Request) -> str:
    """The gateway's :data:`CLIENT_ADDRESS_HEADER`, else the socket peer (a caller inside the cluster)."""
    forwarded = (request.headers.get(CLIENT_ADDRESS_HEADER) or "").strip()
    if forwarded:
        return forwarded
    return request.client.host if request.client else "unknown"
