"""Bookmarks service application: ``create_app()`` and its lifespan (nothing is built at import)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

from fastapi import FastAPI

from bookmarks.api.routes import router
from bookmarks.events.consumers import HANDLERS
from bookmarks.settings import Settings
from common.app import broker_check, create_service_app
from common.auth import AccessTokenVerifier
from common.consumer import ConsumerRunner
from common.db import create_engine, create_session_factory, database_ready
from common.jwt import JwksClient
from common.outbox import OutboxRelay
from common.tasks import BackgroundTasks
from common.tracing import setup_tracing

SERVICE = "bookmarks"


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        setup_tracing(SERVICE, settings.otel_exporter_otlp_endpoint)
        engine = create_engine(settings.database_url, pool_size=settings.db_pool_size)
        sessions = create_session_factory(engine)
        jwks = JwksClient(settings.jwks_url)
        app.state.settings = settings
        app.state.sessions = sessions
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
            service=SERVICE, bootstrap=settings.kafka_bootstrap_servers, sessions=sessions, handlers=HANDLERS
        )
        app.state.relay, app.state.consumer = relay, consumer
        tasks.start("outbox-relay", relay.run())
        tasks.start("consumer", consumer.run())
        try:
            yield
        finally:
            await tasks.stop()
            await jwks.aclose()
            await engine.dispose()

    return create_service_app(service=SERVICE, title="Bookmarks service", lifespan=lifespan, routers=[router])
