"""The service application factory: error handlers, edge middleware, health and readiness.

Metrics are not served here: ``common.server.serve`` exposes them on a separate port (``*_METRICS_PORT``)
that only Prometheus reaches, never the client-facing one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, FastAPI, Request
from fastapi.dependencies.models import Dependant
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from common.asgi import EdgeMiddleware
from common.handlers import install_error_handlers
from common.metrics import KAFKA_BROKER_REACHABLE
from common.settings import CommonSettings

log = logging.getLogger("common.app")

ReadinessCheck = Callable[[], Awaitable[None]]
# A safety net only: each check ends by its own deadlines first (the database's connect or statement
# deadline, 4 s at most with the defaults). Cancelling a check in the middle of a statement would leave
# its connection mid-protocol, so this stays above them; the chart's readiness timeoutSeconds is above it.
READINESS_CHECK_BOUND_SECONDS = 5.0
Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[Any]]


def create_service_app(
    *,
    service: str,
    title: str,
    lifespan: Lifespan,
    routers: Sequence[APIRouter],
    settings: CommonSettings,
    version: str = "1.0.0",
) -> FastAPI:
    """The app of one service; ``settings`` is the one place the edge limits (``MAX_BODY_BYTES``) come from."""
    app = FastAPI(
        title=title,
        version=version,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        # FastAPI's native telemetry would add a second server span (a second trace at the edge) and
        # its own metrics; EdgeMiddleware already does both, once, with our names and labels.
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
        # No service redirects: a trailing-slash redirect names the service's own (internal) address in
        # Location, and behind the gateway it only hides a 404.
        redirect_slashes=False,
    )
    app.state.service = service
    app.state.readiness_checks = []
    install_error_handlers(app)
    app.add_middleware(
        EdgeMiddleware,
        service=service,
        max_body_bytes=settings.max_body_bytes,
        route_body_limits=settings.max_body_bytes_by_route,
    )
    app.include_router(operational_router())
    for router in routers:
        app.include_router(router)
    blocking = threadpool_callables(app.routes)
    if blocking:
        raise TypeError(f"plain-def endpoints or dependencies (run in a thread per request): {blocking}")
    return app


def flat_routes(routes: Iterable[Any]) -> list[Any]:
    """The routes in matching order, included routers opened (FastAPI keeps them as one entry each): what
    a fast path placed in front of them checks itself against."""
    flat: list[Any] = []
    for route in routes:
        included = getattr(route, "original_router", None)
        flat.extend(flat_routes(included.routes) if included is not None else [route])
    return flat


def threadpool_callables(routes: Sequence[Any]) -> list[str]:
    """Endpoints and dependencies FastAPI would run in its threadpool: a plain ``def`` costs a thread hop
    and a GIL hand-over on every request (two of them were 3 % of the bookmarks write path), so every
    one must be ``async def`` (they only read ``app.state``; none blocks)."""
    found: list[str] = []

    def walk(dependant: Dependant) -> None:
        call = dependant.call
        if call is not None and not asyncio.iscoroutinefunction(call):
            found.append(getattr(call, "__qualname__", repr(call)))
        for sub in dependant.dependencies:
            walk(sub)

    for route in routes:
        if isinstance(route, APIRoute):
            walk(route.dependant)
    return sorted(set(found))


def operational_router() -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @router.get("/readyz")
    async def readyz(request: Request) -> JSONResponse:
        checks: list[tuple[str, ReadinessCheck]] = getattr(request.app.state, "readiness_checks", [])
        failures: dict[str, str] = {}
        for name, check in checks:
            try:
                await asyncio.wait_for(check(), timeout=READINESS_CHECK_BOUND_SECONDS)
            except Exception as exc:
                failures[name] = f"{type(exc).__name__}: {exc}"[:200]
        if failures:
            detail = "; ".join(f"{k}: {v}" for k, v in failures.items())
            return JSONResponse(
                {"code": "unavailable", "message": f"Not ready: {detail}"},
                status_code=503,
                headers={"Retry-After": "1"},
            )
        return JSONResponse({"status": "ready"})

    return router


def broker_check(bootstrap: str) -> ReadinessCheck:
    """Readiness of the Kafka bootstrap: at least one listed broker accepts a TCP connection."""

    async def check() -> None:
        errors = []
        for server in bootstrap.split(","):
            parsed = urlsplit("//" + server.strip())
            try:
                _, writer = await asyncio.wait_for(
                    asyncio.open_connection(parsed.hostname, parsed.port or 9092), timeout=1.0
                )
                writer.close()
                await writer.wait_closed()
                return
            except (OSError, TimeoutError) as exc:
                errors.append(f"{server}: {exc}")
        raise ConnectionError("; ".join(errors))

    return check


async def watch_broker(service: str, bootstrap: str, *, interval: float = 15.0) -> None:
    """Report broker reachability as ``kafka_broker_reachable`` forever (never part of readiness).

    A broker outage is a degraded state: writes keep succeeding into the outbox, consumers resume where
    they were. Taking pods out of rotation for it would turn a partial outage into a total one.
    """
    check = broker_check(bootstrap)
    gauge = KAFKA_BROKER_REACHABLE.labels(service)
    while True:
        try:
            await check()
        except (OSError, TimeoutError):
            gauge.set(0)
        else:
            gauge.set(1)
        await asyncio.sleep(interval)
