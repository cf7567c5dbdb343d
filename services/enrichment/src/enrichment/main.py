"""Enrichment API application: ``create_app()`` and its lifespan (nothing is built at import)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

from fastapi import FastAPI

from common.app import broker_check, create_service_app
from common.auth import AccessTokenVerifier
from common.consumer import ConsumerRunner
from common.db import create_engine, create_session_factory, database_ready
from common.jwt import JwksClient
from common.outbox import OutboxRelay
from common.tasks import BackgroundTasks
from common.tracing import setup_tracing
from enrichment.api.routes import router
from enrichment.domain.model import Clock, SystemClock
from enrichment.entitlements import EntitlementsClient
from enrichment.events.consumers import HANDLERS
from enrichment.settings import Settings

SERVICE = "enrichment"


def create_app(
    settings: Settings | None = None, *, clock: Clock | None = None, consumer_group: str | None = None
) -> FastAPI:
    """``clock`` decides quota windows (tests move it across a month); ``consumer_group`` defaults to
    the service name, as every replica must share one group."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        setup_tracing(SERVICE, settings.otel_exporter_otlp_endpoint)
        engine = create_engine(settings.database_url, pool_size=settings.db_pool_size)
        sessions = create_session_factory(engine)
        jwks = JwksClient(settings.jwks_url)
        entitlements = EntitlementsClient(
            auth_url=settings.auth_url, timeout_seconds=settings.entitlements_timeout_seconds
        )
        app.state.settings = settings
        app.state.sessions = sessions
        app.state.clock = clock or SystemClock()
        app.state.entitlements = entitlements
        app.state.verifier = AccessTokenVerifier(
            jwks=jwks, issuer=settings.jwt_issuer, audience=settings.jwt_audience
        )
        app.state.readiness_checks = [
            ("database", partial(database_ready, engine)),
            ("broker", broker_check(settings.kafka_bootstrap_servers)),
        ]
        tasks = BackgroundTasks()
        relay = OutboxRelay(
            service=SERVICE,
            engine=engine,
            database_url=settings.database_url,
            bootstrap=settings.kafka_bootstrap_servers,
        )
        consumer = ConsumerRunner(
            service=SERVICE,
            bootstrap=settings.kafka_bootstrap_servers,
            sessions=sessions,
            handlers=HANDLERS,
            group_id=consumer_group,
        )
        app.state.relay, app.state.consumer = relay, consumer
        tasks.start("outbox-relay", relay.run())
        tasks.start("consumer", consumer.run())
        try:
            yield
        finally:
            await tasks.stop()
            await entitlements.aclose()
            await jwks.aclose()
            await engine.dispose()

    return create_service_app(
        service=SERVICE,
        title="Enrichment service",
        lifespan=lifespan,
        routers=[router],
        max_body_bytes=settings.max_body_bytes,
    )
