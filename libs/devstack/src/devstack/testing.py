"""Test helpers for the outside world and for running our apps on real ports inside a test's loop.

- :class:`LocalJwksServer` plays an identity provider: it generates keys, serves them as JWKS on
  127.0.0.1 and mints ID tokens shaped like a provider's.
- :func:`serve_app` runs an ASGI app (one of our services) under uvicorn on a free port, so services
  under test can call each other over real HTTP.
- :func:`assert_body_limit_is_applied_and_named` is the check every service makes of its body limit.
- :func:`raw_request`, :func:`raw_exchange` and :func:`send_endless_header` speak HTTP/1.1 on a bare
  socket, for the hostile requests an HTTP client library would refuse to send (or would tidy first).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalJwksServer:
    """A JWKS endpoint on loopback with an RSA and an EC key; tokens are minted with either."""

    def __init__(self, *, issuer: str = "https://idp.test", audience: str = "test-client") -> None:
        self.issuer = issuer
        self.audience = audience
        self.rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec_key = ec.generate_private_key(ec.SECP256R1())
        self.rsa_kid = f"rsa-{uuid.uuid4().hex[:8]}"
        self.ec_kid = f"ec-{uuid.uuid4().hex[:8]}"
        self._server: ThreadingHTTPServer | None = None
        self.port = 0

    def jwks(self) -> dict[str, Any]:
        rsa_jwk = json.loads(RSAAlgorithm.to_jwk(self.rsa_key.public_key()))
        rsa_jwk.update(kid=self.rsa_kid, alg="RS256", use="sig")
        ec_jwk = json.loads(ECAlgorithm.to_jwk(self.ec_key.public_key()))
        ec_jwk.update(kid=self.ec_kid, alg="ES256", use="sig")
        return {"keys": [rsa_jwk, ec_jwk]}

    @property
    def jwks_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/jwks"

    def start(self) -> LocalJwksServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's API
                body = json.dumps(owner.jwks()).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self._server.server_address[1])
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def mint(
        self,
        *,
        sub: str | None = None,
        claims: dict[str, Any] | None = None,
        algorithm: str = "RS256",
        expires_in: int = 600,
        headers: dict[str, Any] | None = None,
    ) -> str:
        now = int(time.time())
        payload: dict[str, Any] = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": sub or uuid.uuid4().hex,
            "iat": now,
            "exp": now + expires_in,
            **(claims or {}),
        }
        if algorithm == "ES256":
            return jwt.encode(payload, self.ec_key, algorithm="ES256", headers={"kid": self.ec_kid, **(headers or {})})
        return jwt.encode(payload, self.rsa_key, algorithm="RS256", headers={"kid": self.rsa_kid, **(headers or {})})

    def forge(self, header: dict[str, Any], *, sub: str | None = None, claims: dict[str, Any] | None = None) -> str:
        """A token with exactly ``header`` (even a non-string ``alg``/``kid``), signed RS256 with the real key.

        PyJWT refuses to write such headers; attackers do not ask it.
        """
        now = int(time.time())
        payload = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": sub or uuid.uuid4().hex,
            "iat": now,
            "exp": now + 600,
            **(claims or {}),
        }
        signing_input = f"{_b64url(header)}.{_b64url(payload)}".encode()
        signature = RSAAlgorithm(RSAAlgorithm.SHA256).sign(signing_input, self.rsa_key)
        return f"{signing_input.decode()}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"

    def hostile_header_tokens(self, *, sub: str | None = None, claims: dict[str, Any] | None = None) -> dict[str, str]:
        """Otherwise valid tokens whose header ``alg`` or ``kid`` is not a string, by name."""
        odd: dict[str, Any] = {"number": 256, "list": ["RS256"], "object": {"RS256": True}, "null": None, "bool": True}
        tokens = {
            f"alg {name}": self.forge({"alg": v, "kid": self.rsa_kid, "typ": "JWT"}, sub=sub, claims=claims)
            for name, v in odd.items()
        }
        tokens |= {
            f"kid {name}": self.forge({"alg": "RS256", "kid": v, "typ": "JWT"}, sub=sub, claims=claims)
            for name, v in odd.items()
        }
        tokens["kid list of the real kid"] = self.forge({"alg": "RS256", "kid": [self.rsa_kid]}, sub=sub, claims=claims)
        return tokens


def _b64url(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


@contextlib.asynccontextmanager
async def serve_app(
    app: Any, *, port: int | None = None, host: str = "127.0.0.1", **options: Any
) -> AsyncIterator[str]:
    """Serve ``app`` (lifespan included) on ``host:port`` in the current loop; yields its base URL.

    ``options`` go to ``uvicorn.Config`` (e.g. ``http=`` the services' protocol class, ``common.server``)."""
    import uvicorn

    port = port or free_port()
    settings: dict[str, Any] = {"log_config": None, "access_log": False, **options}
    config = uvicorn.Config(app, host=host, port=port, lifespan="on", **settings)
    server = uvicorn.Server(config)
    # Signals belong to the test runner, not to an app served inside it.
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("server exited before starting")
        await asyncio.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        await task


async def assert_body_limit_is_applied_and_named(app: Any, limit: int) -> None:
    """``app`` (its lifespan not run: nothing is connected) refuses a body one byte over ``limit`` with
    the 413 that names the limit (``MAX_BODY_BYTES``)."""
    import httpx

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        response = await client.post(
            "/v1/anything", content=b"x" * (limit + 1), headers={"content-type": "application/json"}
        )
    assert response.status_code == 413
    assert response.json() == {
        "code": "payload-too-large",
        "message": f"The request body is larger than the limit of {limit} bytes.",
    }


RawAnswer = tuple[int, dict[str, str], bytes]


def raw_request(
    target: str, headers: Iterable[tuple[str, str]] = (), *, method: str = "GET", host: str = "t", body: bytes = b""
) -> bytes:
    """An HTTP/1.1 request head exactly as written (nothing validated or trimmed), then ``body``."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def raw_exchange(url: str, request: bytes) -> RawAnswer:
    """Send raw ``request`` bytes to ``url`` (``http://host:port``) on a connection of its own and read
    the whole answer: status, headers by lower-case name, body."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(request)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines if line)}
        body = await reader.readexactly(int(headers.get("content-length", "0")))
    finally:
        writer.close()
    return int(status_line.split()[1]), headers, body


async def send_endless_header(url: str, target: str) -> bytes:
    """Send a request whose one header grows towards 16 MiB (256 × 64 KiB) and stop as soon as the
    server answers; the first bytes of that answer."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(f"GET {target} HTTP/1.1\r\nHost: t\r\nX-Big: ".encode())
        answer = asyncio.ensure_future(reader.read(4096))
        for _ in range(256):
            if answer.done():
                break
            writer.write(b"x" * 65536)
            try:
                await writer.drain()
            except ConnectionError:
                break
        return await answer
    finally:
        writer.close()


def wait_until(predicate: Callable[[], bool], what: str, *, timeout: float, interval: float = 0.05) -> None:
    """Poll the blocking ``predicate`` until it holds; ``timeout`` only keeps a broken test from hanging
    (it never asserts on speed)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(interval)


class ManualClock:
    """A clock a test moves by hand (``clock.now += 5``); passed where code takes ``clock=time.monotonic``."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def eventually(check: Any, *, timeout: float = 20.0, interval: float = 0.05) -> Any:  # noqa: ASYNC109
    """Poll the async ``check`` until it returns a truthy value; fail after ``timeout`` seconds.

    For effects that travel through Kafka: the test waits for the outcome, it never asserts a duration.
    """
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last value: {last!r})")
