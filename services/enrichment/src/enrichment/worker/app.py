"""The worker process: job slots, outbox relay, and /healthz /readyz /metrics (no public routes)."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from common.app import create_service_app, watch_broker
from common.db import DatabaseReadiness, Deadlines, create_engine, create_session_factory
from common.outbox import OutboxRelay
from common.tasks import BackgroundTasks
from common.tracing import setup_tracing
from enrichment.fetch import SafeFetcher
from enrichment.pipeline import BrowserRenderer, build_analyzer
from enrichment.settings import Settings
from enrichment.worker.attempt import Enricher
from enrichment.worker.runner import JobWorker

SERVICE = "enrichment-worker"


def default_worker_id() -> str:
    # Unique per process, readable in the jobs table: which host and pid holds a lease.
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def create_worker_app(settings: Settings | None = None, *, worker_id: str | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        setup_tracing(SERVICE, settings.otel_exporter_otlp_endpoint)
        # Renderer first: with ENRICHMENT_BROWSER=required a missing browser must stop start-up.
        renderer = await BrowserRenderer.create(
            mode=settings.browser,
            allow_private_networks=settings.allow_private_networks,
            timeout_seconds=settings.fetch_timeout_seconds * 2,
            max_concurrency=settings.worker_concurrency,
        )
        jobs_and_two = settings.worker_concurrency + 2  # a session per job, and two to spare
        engine = create_engine(
            settings.database_url,
            pool_size=max(settings.db_pool_size, jobs_and_two),
            deadlines=Deadlines.of(settings),
            service=SERVICE,
        )
        sessions = create_session_factory(engine, concurrency=max(settings.db_concurrency, jobs_and_two))
        fetcher = SafeFetcher(
            timeout_seconds=settings.fetch_timeout_seconds,
            user_agent=settings.user_agent,
            max_body_bytes=settings.max_page_bytes,
            allow_private_networks=settings.allow_private_networks,
        )
        analyzer = build_analyzer(
            openai_api_key=settings.openai_api_key, openai_base_url=settings.openai_base_url, model=settings.llm_model
        )
        worker = JobWorker(
            sessions=sessions,
            database_url=settings.database_url,
            enricher=Enricher(fetcher=fetcher, analyzer=analyzer, renderer=renderer),
            worker_id=worker_id or default_worker_id(),
            concurrency=settings.worker_concurrency,
            lease_seconds=settings.job_lease_seconds,
            poll_seconds=settings.worker_poll_seconds,
            retry_delays=settings.retry_delays_seconds,
            cache_ttl_seconds=settings.cache_ttl_seconds,
            job_retention_seconds=settings.job_retention_seconds,
            max_crashes=settings.max_worker_crashes,
            deadlines=Deadlines.of(settings),
        )
        # The worker writes enrichment events to the outbox too; its relay stands by (advisory lock)
        # so they are published even when no API replica runs.
        relay = OutboxRelay(
            service=SERVICE,
            engine=engine,
            database_url=settings.database_url,
            bootstrap=settings.kafka_bootstrap_servers,
        )
        app.state.settings = settings
        app.state.sessions = sessions
        app.state.worker = worker
        app.state.relay = relay
        tasks = BackgroundTasks()
        worker_task = tasks.start("job-worker", worker.run())
        tasks.start("outbox-relay", relay.run())
        tasks.start("broker-probe", watch_broker(SERVICE, settings.kafka_bootstrap_servers))

        async def worker_running() -> None:
            # Slots survive database outages on their own; a finished task means a bug stopped them.
            if worker_task.done():
                raise RuntimeError("the job worker stopped")

        app.state.readiness_checks = [
            ("database", DatabaseReadiness(engine, grace_seconds=settings.db_ready_grace_seconds)),
            ("job-worker", worker_running),
        ]
        try:
            yield
        finally:
            # Slots hand their attempts back before the pool they need for it is closed.
            await tasks.stop()
            await fetcher.aclose()
            await analyzer.aclose()
            if renderer is not None:
                await renderer.close()
            await engine.dispose()

    return create_service_app(
        service=SERVICE, title="Enrichment worker", lifespan=lifespan, routers=[], settings=settings
    )
