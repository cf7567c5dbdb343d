"""CPU per request of the edge: the gateway process per proxied write, and the
framework layer every service runs per request.

    .venv/bin/python bench/proxy_cpu.py [--writes 3000] [--concurrency 16] [--framework 5000]

gateway    ``python -m gateway`` with its defaults (INFO logs, access lines, tracing as shipped, rate
           limits on) proxies ``PUT /v1/bookmarks/{id}`` to a stub upstream (a bare uvicorn ASGI app
           that also serves the JWKS). One user per worker, so the per-user limit is never hit. The
           gateway's CPU (user + system, /proc) over the run, divided by the writes; its idle CPU over
           a window of the same length is measured just before and reported beside it. No broker runs:
           its tails retry with a back-off, which the idle figure includes.
framework  ``common.app.create_service_app`` with one trivial PUT route, called in-process over ASGI
           (no sockets), logging set up as the services do it (INFO, JSON to a file): process CPU per
           request of the middleware, access line, span, metrics and FastAPI routing.

Prints one JSON object (the load generator's own CPU is not in any figure).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

ROOT = Path(__file__).resolve().parent.parent
ISSUER, AUDIENCE, KID = "bookmarks-auth", "bookmarks-api", "bench-key"
RESPONSE = json.dumps(
    {
        "clientBookmarkId": "x" * 36,
        "url": "https://example.com/some/page",
        "title": "A title",
        "tags": ["a", "b"],
        "position": 123456,
        "updatedAt": "2026-01-01T00:00:00.000Z",
    }
).encode()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- stub upstream (a child process)


def stub_upstream(port: int, jwks: str) -> None:
    import uvicorn

    jwks_body = jwks.encode()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        body = jwks_body if scope["path"] == "/v1/auth/jwks" else RESPONSE
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


# ---------------------------------------------------------------- gateway measurement


def keys() -> tuple[rsa.RSAPrivateKey, str]:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key()))
    jwk.update({"kid": KID, "alg": "RS256", "use": "sig"})
    return private, json.dumps({"keys": [jwk]})


def token(private: rsa.RSAPrivateKey) -> str:
    now = int(time.time())
    claims = {
        "sub": str(uuid.uuid4()),
        "jti": uuid.uuid4().hex,
        "iss": ISSUER,
        "aud": AUDIENCE,
        "iat": now,
        "exp": now + 900,
    }
    return jwt.encode(claims, private, algorithm="RS256", headers={"kid": KID})


@contextlib.contextmanager
def process(args: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(args, env={**os.environ, **env}, stdout=out, stderr=out, cwd=ROOT)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


async def wait_up(url: str) -> None:
    async with httpx.AsyncClient() as http:
        for _ in range(1200):
            with contextlib.suppress(httpx.HTTPError):
                if (await http.get(url)).status_code < 500:
                    return
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


async def load(base: str, tokens: list[str], writes: int) -> float:
    per_worker = writes // len(tokens)
    limits = httpx.Limits(max_connections=len(tokens), max_keepalive_connections=len(tokens))
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as http:

        async def worker(bearer: str) -> None:
            headers = {"Authorization": f"Bearer {bearer}"}
            for i in range(per_worker):
                body = {"url": f"https://example.com/{i}", "title": "t", "tags": ["a"]}
                response = await http.put(f"/v1/bookmarks/{uuid.uuid4()}", json=body, headers=headers)
                if response.status_code != 200:
                    raise RuntimeError(f"{response.status_code}: {response.text[:200]}")

        started = time.perf_counter()
        await asyncio.gather(*(worker(bearer) for bearer in tokens))
        return time.perf_counter() - started


def _profiler(pid: int, profile: str | None) -> subprocess.Popen[bytes] | None:
    """``py-spy record`` of the gateway during the load, collapsed stacks into ``profile`` (optional)."""
    if not profile:
        return None
    spy = os.environ.get("PY_SPY", "py-spy")
    return subprocess.Popen([spy, "record", "-p", str(pid), "-f", "raw", "-o", profile, "-r", "200"])


async def bench_gateway(writes: int, concurrency: int, workdir: Path, profile: str | None) -> dict[str, Any]:
    private, jwks = keys()
    upstream_port, port = free_port(), free_port()
    upstream = f"http://127.0.0.1:{upstream_port}"
    stub = [sys.executable, __file__, "--stub", str(upstream_port)]
    env = {
        "GATEWAY_PORT": str(port),
        "GATEWAY_METRICS_PORT": str(free_port()),
        "AUTH_URL": upstream,
        "BOOKMARKS_URL": upstream,
        "ENRICHMENT_URL": upstream,
        "KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{free_port()}",  # nothing listens: tails back off
    }
    with (
        process(stub, {"BENCH_JWKS": jwks}, workdir / "stub.log"),
        process([sys.executable, "-m", "gateway"], env, workdir / "gateway.log") as gateway,
    ):
        base = f"http://127.0.0.1:{port}"
        await wait_up(upstream + "/v1/auth/jwks")
        await wait_up(base + "/healthz")
        tokens = [token(private) for _ in range(concurrency)]
        await load(base, tokens, concurrency * 5)  # warm-up: keys fetched, tokens cached, pools open
        idle_before = cpu_seconds(gateway.pid)
        started = time.perf_counter()
        await asyncio.sleep(3.0)
        idle_rate = (cpu_seconds(gateway.pid) - idle_before) / (time.perf_counter() - started)
        profiler = _profiler(gateway.pid, profile)
        before = cpu_seconds(gateway.pid)
        elapsed = await load(base, tokens, writes)
        used = cpu_seconds(gateway.pid) - before
        if profiler is not None:
            profiler.send_signal(signal.SIGINT)
            profiler.wait(30)
    done = writes // concurrency * concurrency
    return {
        "writes": done,
        "concurrency": concurrency,
        "writes_per_second": round(done / elapsed, 1),
        "gateway_cpu_ms_per_write": round(used / done * 1000, 3),
        "gateway_cpu_ms_per_write_minus_idle": round((used - idle_rate * elapsed) / done * 1000, 3),
        "gateway_idle_cpu_ms_per_second": round(idle_rate * 1000, 2),
    }


# ---------------------------------------------------------------- framework layer (in-process)


async def bench_framework(requests: int, workdir: Path) -> dict[str, Any]:
    from fastapi import APIRouter

    from common.app import create_service_app
    from common.logging import setup_logging
    from common.settings import CommonSettings
    from common.tracing import setup_tracing

    setup_logging("bench", "INFO")
    import logging

    handler = logging.FileHandler(workdir / "framework.log")
    handler.setFormatter(logging.getLogger().handlers[0].formatter)
    logging.getLogger().handlers[:] = [handler]
    setup_tracing("bench", None)
    router = APIRouter()

    @router.put("/v1/things/{thing_id}")
    async def put_thing(thing_id: str) -> Any:
        from fastapi.responses import Response

        return Response(RESPONSE, media_type="application/json")

    app = create_service_app(
        service="bench", title="bench", lifespan=_no_lifespan, routers=[router], settings=CommonSettings()
    )
    body = b'{"url": "https://example.com/", "title": "t"}'
    headers = [
        (b"host", b"bookmarks:8082"),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"authorization", b"Bearer " + b"x" * 600),
        (b"x-request-id", b"0123456789abcdef0123456789abcdef"),
        (b"x-client-ip", b"127.0.0.1"),
        (b"x-forwarded-for", b"127.0.0.1"),
        (b"user-agent", b"python-httpx/0.28.1"),
    ]

    async def one(index: int) -> None:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "PUT",
            "scheme": "http",
            "path": f"/v1/things/{index}",
            "raw_path": f"/v1/things/{index}".encode(),
            "query_string": b"",
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 5000),
            "server": ("127.0.0.1", 8082),
        }
        messages = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict[str, Any]:
            return messages.pop() if messages else {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] != 200:
                raise RuntimeError(f"status {message['status']}")

        await app(scope, receive, send)

    for i in range(200):
        await one(i)
    started = time.process_time()
    for i in range(requests):
        await one(i)
    used = time.process_time() - started
    return {"requests": requests, "framework_cpu_ms_per_request": round(used / requests * 1000, 3)}


@contextlib.asynccontextmanager
async def _no_lifespan(app: Any) -> Any:
    yield


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writes", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--framework", type=int, default=5000, help="in-process requests (0: skip)")
    parser.add_argument("--profile", help="py-spy (PY_SPY=path) collapsed stacks of the gateway into this file")
    parser.add_argument("--stub", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stub:
        stub_upstream(args.stub, os.environ["BENCH_JWKS"])
        return 0
    with tempfile.TemporaryDirectory(prefix="proxy-cpu-") as tmp:
        result: dict[str, Any] = {}
        if args.writes:
            result["gateway"] = asyncio.run(bench_gateway(args.writes, args.concurrency, Path(tmp), args.profile))
        if args.framework:
            result["framework"] = asyncio.run(bench_framework(args.framework, Path(tmp)))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
