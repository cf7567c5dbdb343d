"""Bookmarks service application: ``create_app()`` and its lifespan (nothing is built at import)."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from bookmarks.api.fast_path import install_write_fast_path
from bookmarks.api.routes import collections_router, internal_router, router
from bookmarks.bulk.routes import router as bulk_router
from bookmarks.duplicates.routes import router as duplicates_router
from bookmarks.events.consumers import HANDLERS
from bookmarks.exports.routes import router as exports_router
from bookmarks.highlights.routes import router as highlights_router
from bookmarks.housekeeping import run_housekeeping
from bookmarks.imports.routes import router as imports_router
from bookmarks.imports.service import JobConfig, run_import_worker
from bookmarks.search.index import SEARCH_INDEX
from bookmarks.search.routes import router as search_router
from bookmarks.settings import Settings
from bookmarks.store.rows import install_index
from bookmarks.sync.routes import router as sync_router
from bookmarks.trash.routes import router as trash_router
from common.app import create_service_app
from common.auth import AccessTokenVerifier
from common.jwt import JwksClient
from common.runtime import service_backbone
from common.tracing import setup_tracing

SERVICE = "bookmarks"

# The bookmark row's statements write search's columns with the record's (store/rows.py): installed on
# import, so every process and test that builds the app, or imports this module, writes complete rows.
install_index(SEARCH_INDEX)


def create_app(settings: Settings | None = None, *, consumer_group: str | None = None) -> FastAPI:
    """``consumer_group``: the event consumer's group, "bookmarks" by default (tests give in-process apps one
    of their own, so a service process a test killed cannot stall their consumer's rebalance)."""
    settings = settings or Settings()
    if problems := settings.production_problems():
        raise RuntimeError("; ".join(problems))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        setup_tracing(SERVICE, settings.otel_exporter_otlp_endpoint, sample_ratio=settings.traces_sample_ratio)
        jwks = JwksClient(settings.jwks_url)
        app.state.settings = settings
        app.state.verifier = AccessTokenVerifier(jwks=jwks, issuer=settings.jwt_issuer, audience=settings.jwt_audience)
        try:
            async with service_backbone(
                app,
                service=SERVICE,
                settings=settings,
                database_url=settings.database_url,
                handlers=HANDLERS,
                consumer_group=consumer_group,
            ) as backbone:
                app.state.import_wakeup = asyncio.Event()
                config = JobConfig(
                    worker_id=f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}",
                    lease_seconds=settings.import_lease_seconds,
                    batch_size=settings.import_batch_size,
                )
                backbone.tasks.start(
                    "import-worker",
                    run_import_worker(backbone.sessions, config, app.state.import_wakeup, settings.import_poll_seconds),
                )
                if settings.trash_purge_interval_seconds:
                    backbone.tasks.start(
                        "housekeeping",
                        run_housekeeping(
                            sessions=backbone.sessions,
                            retention=settings.trash_retention,
                            interval_seconds=settings.trash_purge_interval_seconds,
                        ),
                    )
                yield
        finally:
            await jwks.aclose()

    app = create_service_app(
        service=SERVICE,
        title="Bookmarks service",
        lifespan=lifespan,
        routers=[
            bulk_router,
            sync_router,
            search_router,
            router,
            collections_router,
            highlights_router,
            imports_router,
            exports_router,
            trash_router,
            duplicates_router,
            internal_router,
        ],
        settings=settings,
    )
    install_write_fast_path(app.router.routes)
    return app
