"""Gateway application: ``create_app()`` and its lifespan (nothing is built at import)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from common.app import create_service_app
from common.auth import AccessTokenVerifier
from common.events import (
    TOPIC_BOOKMARK_DELETED,
    TOPIC_BOOKMARK_SAVED,
    TOPIC_COLLECTION_CHANGED,
    TOPIC_HIGHLIGHT_CHANGED,
    TOPIC_USER_DELETED,
    TOPIC_USER_MERGED,
)
from common.jwt import JwksClient
from common.runtime import process_backbone
from common.tracing import setup_tracing
from gateway.api.routes import build_router, install_proxy_fast_path
from gateway.denylist import DenyList
from gateway.edge import EdgeAuth
from gateway.events.consumers import (
    NUDGE_FETCH_MAX_WAIT_MS,
    NUDGE_IDLE_FETCH_MAX_WAIT_MS,
    TopicTail,
    deny_handler,
    nudge_handler,
)
from gateway.metrics import initialise as initialise_metrics
from gateway.openapi import OpenApiCatalog
from gateway.proxy import UpstreamProxy
from gateway.ratelimit import TokenBucketLimiter
from gateway.realtime import Hub
from gateway.routing import UPSTREAMS
from gateway.settings import Settings
from gateway.state import Gateway
from gateway.webapp import WebApp, build_web_router, load_web_dir

SERVICE = "gateway"

_CORS_HEADERS = ["Authorization", "Content-Type", "X-Request-Id", "traceparent", "tracestate", "X-Admin-Token"]
_CORS_EXPOSED = [
    "X-Request-Id",
    "Retry-After",
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "WWW-Authenticate",
]


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    initialise_metrics(UPSTREAMS)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        setup_tracing(SERVICE, settings.otel_exporter_otlp_endpoint, sample_ratio=settings.traces_sample_ratio)
        proxy = UpstreamProxy(
            upstreams=settings.upstream_urls,
            timeout_seconds=settings.upstream_timeout_seconds,
            max_connections=settings.upstream_max_connections,
            max_keepalive=settings.upstream_max_keepalive,
            trusted_proxy_hops=settings.trusted_proxy_hops,
        )
        jwks = JwksClient(settings.gateway_jwks_url, http=proxy.client)
        verifier = AccessTokenVerifier(jwks=jwks, issuer=settings.jwt_issuer, audience=settings.jwt_audience)
        denylist = DenyList(retention_seconds=settings.deny_retention_seconds)
        hub = Hub(max_per_user=settings.ws_max_per_user, coalesce_seconds=settings.nudge_coalesce_ms / 1000)
        gateway = Gateway(
            settings=settings,
            auth=EdgeAuth(verifier, denylist),
            denylist=denylist,
            hub=hub,
            proxy=proxy,
            catalog=OpenApiCatalog(
                client=proxy.client,
                upstreams=settings.upstream_urls,
                refresh_seconds=settings.openapi_refresh_seconds,
            ),
            user_limiter=_limiter(settings.rate_limit_per_minute),
            ip_limiter=_limiter(settings.ip_rate_limit_per_minute),
            image_limiter=_limiter(settings.image_rate_limit_per_minute),
        )
        app.state.gateway = gateway

        def deny_user(user_id: uuid.UUID, occurred_at: float, reason: str) -> None:
            gateway.deny(user_id, since=occurred_at, reason=reason)

        deny = deny_handler(deny_user)
        nudge = nudge_handler(hub.notify, listening=hub.listening)
        tail = TopicTail(
            name="events",
            bootstrap=settings.kafka_bootstrap_servers,
            handlers={
                TOPIC_USER_DELETED: deny,
                TOPIC_USER_MERGED: deny,
                TOPIC_BOOKMARK_SAVED: nudge,
                TOPIC_BOOKMARK_DELETED: nudge,
                TOPIC_COLLECTION_CHANGED: nudge,
                TOPIC_HIGHLIGHT_CHANGED: nudge,
            },
            lookback_seconds=dict.fromkeys((TOPIC_USER_DELETED, TOPIC_USER_MERGED), settings.deny_retention_seconds),
            fetch_max_wait_ms=NUDGE_IDLE_FETCH_MAX_WAIT_MS,
            fast_fetch=hub.has_sockets,
            fast_fetch_max_wait_ms=NUDGE_FETCH_MAX_WAIT_MS,
        )
        hub.on_first_socket = tail.refresh_fetch_wait

        async def jwks_reachable() -> None:
            response = await proxy.client.get(settings.gateway_jwks_url, timeout=1.5)
            response.raise_for_status()
            if not response.json().get("keys"):
                raise RuntimeError("the JWKS has no keys")

        async def events_ready() -> None:
            # Serving before the deny-list is rebuilt would let a deleted user's token through again.
            if not tail.caught_up.is_set():
                raise RuntimeError("deny-list not loaded yet")

        # The gateway runs the backbone every process runs (common.runtime.process_backbone): readiness,
        # topic check, broker probe, background tasks. It owns no database, so no relay and no consumer:
        # its Kafka tail reads every partition in every replica, without a group (events/consumers.py).
        try:
            async with process_backbone(
                app,
                service=SERVICE,
                settings=settings,
                topics=tail.topics,
                checks_before=[("jwks", jwks_reachable)],
                checks_after=[("events", events_ready)],
            ) as backbone:
                app.state.event_tail = tail
                backbone.tasks.start("event-tail", tail.run())
                backbone.tasks.start("openapi-catalog", gateway.catalog.run())
                try:
                    yield
                finally:
                    hub.close_all()
        finally:
            await proxy.aclose()

    routers = [build_router()]
    if settings.web_dir:
        routers.append(build_web_router(WebApp(load_web_dir(Path(settings.web_dir)))))
    app = create_service_app(service=SERVICE, title="Gateway", lifespan=lifespan, routers=routers, settings=settings)
    install_proxy_fast_path(app.router.routes)

    def combined_openapi() -> dict[str, Any]:
        gateway: Gateway = app.state.gateway
        return gateway.catalog.document()

    # FastAPI's own /openapi.json would describe the proxy routes (none public); serve the combined
    # public document there too, the documented way of customising it.
    app.openapi = combined_openapi  # type: ignore[method-assign]
    if settings.cors_origin_list:
        origins = settings.cors_origin_list
        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=_CORS_HEADERS,
            expose_headers=_CORS_EXPOSED,
            max_age=600,
        )
    return app


def _limiter(per_minute: int) -> TokenBucketLimiter | None:
    return TokenBucketLimiter(per_minute) if per_minute > 0 else None
