"""Enrichment API application: ``create_app()`` and its lifespan (nothing is built at import)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from common.app import create_service_app
from common.auth import AccessTokenVerifier
from common.jwt import JwksClient
from common.runtime import Backbone, service_backbone
from common.tracing import setup_tracing
from enrichment.anti_entropy import BookmarksSource, CheckConfig, run_anti_entropy
from enrichment.api.routes import router
from enrichment.domain.model import Clock, SystemClock
from enrichment.entitlements import EntitlementsClient
from enrichment.events.consumers import BATCH_HANDLERS, EVENT_FILTERS, HANDLERS
from enrichment.settings import Settings

SERVICE = "enrichment"


@asynccontextmanager
async def _anti_entropy(settings: Settings, backbone: Backbone) -> AsyncIterator[None]:
    """The projection's periodic comparison with bookmarks, unless ANTI_ENTROPY_INTERVAL_SECONDS is 0."""
    if not settings.anti_entropy_interval_seconds:
        yield
        return
    source = BookmarksSource(
        bookmarks_url=settings.bookmarks_url, timeout_seconds=settings.anti_entropy_timeout_seconds
    )
    config = CheckConfig(
        users_per_page=settings.anti_entropy_users_per_page, settle_seconds=settings.anti_entropy_settle_seconds
    )
    task = backbone.tasks.start(
        "anti-entropy",
        run_anti_entropy(
            engine=backbone.engine,
            sessions=backbone.sessions,
            source=source,
            interval_seconds=settings.anti_entropy_interval_seconds,
            config=config,
        ),
    )
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        await source.aclose()


def create_app(
    settings: Settings | None = None, *, clock: Clock | None = None, consumer_group: str | None = None
) -> FastAPI:
    """``clock`` decides quota windows (tests move it across a month); ``consumer_group`` defaults to
    the service name, as every replica must share one group."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        setup_tracing(SERVICE, settings.otel_exporter_otlp_endpoint)
        jwks = JwksClient(settings.jwks_url)
        entitlements = EntitlementsClient(
            auth_url=settings.auth_url, timeout_seconds=settings.entitlements_timeout_seconds
        )
        app.state.settings = settings
        app.state.clock = clock or SystemClock()
        app.state.entitlements = entitlements
        app.state.verifier = AccessTokenVerifier(jwks=jwks, issuer=settings.jwt_issuer, audience=settings.jwt_audience)
        try:
            async with service_backbone(
                app,
                service=SERVICE,
                settings=settings,
                database_url=settings.database_url,
                handlers=HANDLERS,
                consumer_group=consumer_group,
                event_filters=EVENT_FILTERS,
                batch_handlers=BATCH_HANDLERS,
            ) as backbone:
                async with _anti_entropy(settings, backbone):
                    yield
        finally:
            await entitlements.aclose()
            await jwks.aclose()

    return create_service_app(
        service=SERVICE,
        title="Enrichment service",
        lifespan=lifespan,
        routers=[router],
        settings=settings,
    )
