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
from enrichment.anti_entropy import (
    AuthSource,
    BookmarksSource,
    Check,
    CheckConfig,
    check_bookmark_urls,
    run_anti_entropy,
)
from enrichment.anti_entropy_users import check_users
from enrichment.api.routes import router
from enrichment.domain.model import Clock, SystemClock
from enrichment.entitlements import EntitlementsClient
from enrichment.events.consumers import BATCH_HANDLERS, EVENT_FILTERS, HANDLERS
from enrichment.fetch import SafeFetcher
from enrichment.links.routes import router as links_router
from enrichment.previews.fetch import Previewer
from enrichment.previews.routes import router as previews_router
from enrichment.settings import Settings

SERVICE = "enrichment"


@asynccontextmanager
async def _anti_entropy(settings: Settings, backbone: Backbone) -> AsyncIterator[None]:
    """The projections' periodic comparison with their sources, unless ANTI_ENTROPY_INTERVAL_SECONDS is 0."""
    if not settings.anti_entropy_interval_seconds:
        yield
        return
    timeout = settings.anti_entropy_timeout_seconds
    bookmarks = BookmarksSource(bookmarks_url=settings.bookmarks_url, timeout_seconds=timeout)
    auth = AuthSource(auth_url=settings.auth_url, timeout_seconds=timeout)
    config = CheckConfig(
        users_per_page=settings.anti_entropy_users_per_page, settle_seconds=settings.anti_entropy_settle_seconds
    )
    sessions = backbone.sessions
    checks = [
        Check(
            "bookmark_urls",
            lambda memory: check_bookmark_urls(sessions=sessions, source=bookmarks, config=config, in_flight=memory),
        ),
        Check("users", lambda memory: check_users(sessions=sessions, source=auth, config=config, in_flight=memory)),
    ]
    task = backbone.tasks.start(
        "anti-entropy",
        run_anti_entropy(
            engine=backbone.engine,
            checks=checks,
            interval_seconds=settings.anti_entropy_interval_seconds,
            settle_seconds=config.settle_seconds,
        ),
    )
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        await bookmarks.aclose()
        await auth.aclose()


def _previewer(settings: Settings) -> Previewer:
    limits = settings.preview_limits
    fetcher = SafeFetcher(
        timeout_seconds=limits.timeout_seconds,
        user_agent=settings.user_agent,
        max_body_bytes=max(limits.head_bytes, limits.image_bytes),
        allow_private_networks=settings.allow_private_networks,
    )
    return Previewer(fetcher=fetcher, limits=limits)


def create_app(
    settings: Settings | None = None, *, clock: Clock | None = None, consumer_group: str | None = None
) -> FastAPI:
    """``clock`` decides quota windows (tests move it across a month); ``consumer_group`` defaults to
    the service name, as every replica must share one group."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        setup_tracing(SERVICE, settings.otel_exporter_otlp_endpoint, sample_ratio=settings.traces_sample_ratio)
        jwks = JwksClient(settings.jwks_url)
        entitlements = EntitlementsClient(
            auth_url=settings.auth_url, timeout_seconds=settings.entitlements_timeout_seconds
        )
        app.state.settings = settings
        app.state.clock = clock or SystemClock()
        app.state.entitlements = entitlements
        app.state.verifier = AccessTokenVerifier(jwks=jwks, issuer=settings.jwt_issuer, audience=settings.jwt_audience)
        app.state.previewer = previewer = _previewer(settings)
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
            await previewer.aclose()
            await entitlements.aclose()
            await jwks.aclose()

    return create_service_app(
        service=SERVICE,
        title="Enrichment service",
        lifespan=lifespan,
        routers=[router, previews_router, links_router],
        settings=settings,
    )
