"""Bench-only: ``gateway.upstream.UpstreamPool``'s interface over a plain ``httpx.AsyncClient``.

What the gateway's proxied requests would cost without its own pooled HTTP/1.1 client
(``bench/speed_variants.py gateway upstream``). Same bounds (timeout, connections, keep-alive), the
response streamed, errors mapped to the pool's exception kinds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx

from gateway.upstream import ConnectFailed, Origin, PoolTimeout, ProtocolFailed, StreamFailed, UpstreamTimeout

RawHeaders = list[tuple[bytes, bytes]]


class HttpxResponse:
    complete = False

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.status_code = response.status_code
        self.raw_headers: RawHeaders = list(response.headers.raw)

    def header(self, name: bytes) -> bytes | None:
        for key, value in self.raw_headers:
            if key.lower() == name:
                return value
        return None

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_raw():
                yield chunk
        except httpx.HTTPError as exc:
            raise StreamFailed(str(exc)) from exc

    async def aclose(self) -> None:
        await self._response.aclose()


class HttpxPool:
    def __init__(self, *, timeout: float, max_connections: int, max_keepalive: int, keepalive_expiry: float) -> None:
        self.timeout = timeout
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout),
            limits=httpx.Limits(
                max_connections=max_connections,
                max_keepalive_connections=max_keepalive,
                keepalive_expiry=keepalive_expiry,
            ),
            follow_redirects=False,
            trust_env=False,
        )

    async def aclose(self) -> None:
        await self.client.aclose()

    async def request(
        self, origin: Origin, method: bytes, target: bytes, headers: RawHeaders, body: Any
    ) -> HttpxResponse:
        scheme = "https" if origin.tls else "http"
        url = httpx.URL(f"{scheme}://{origin.host}:{origin.port}{target.decode('latin-1')}")
        request = self.client.build_request(method.decode("ascii"), url, headers=headers, content=body)
        try:
            return HttpxResponse(await self.client.send(request, stream=True))
        except httpx.PoolTimeout as exc:
            raise PoolTimeout(str(exc)) from exc
        except httpx.ConnectError as exc:
            raise ConnectFailed(str(exc)) from exc
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(str(exc)) from exc
        except httpx.HTTPError as exc:
            raise ProtocolFailed(str(exc)) from exc
