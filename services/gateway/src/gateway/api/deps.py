"""Access to the gateway's components from a request or WebSocket."""

from __future__ import annotations

from starlette.requests import HTTPConnection

from gateway.state import Gateway


def gateway_of(connection: HTTPConnection) -> Gateway:
    gateway: Gateway = connection.app.state.gateway
    return gateway
