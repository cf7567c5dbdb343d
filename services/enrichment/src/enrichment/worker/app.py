"""The worker process: job slots, the link checker, outbox relay, and /healthz /readyz /metrics (no public
routes)."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI

from common.app import create_service_app
from common.db import Deadlines
from common.runtime import service_backbone
from common.tracing import setup_tracing
from enrichment.domain.model import Clock, SystemClock
from enrichment.fetch import SafeFetcher
from enrichment.metrics import LINK_CHECK_INTERVAL
from enrichment.pipeline import BrowserRenderer, build_analyzer
from enrichment.settings import Settings
from enrichment.worker.attempt import Enricher
from enrichment.worker.links import LinkCheckConfig, LinkChecker
from enrichment.worker.runner import JobWorker

SERVICE = "enrichment-worker"


def default_worker_id() -> str:
    # Unique per process, readable in the jobs table: which host and pid holds a lease.
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def _running(task: asyncio.Task[None], name: str = "the job worker") -> Callable[[], Awaitable[None]]:
    async def check() -> None:
        # Slots survive database outages on their own; a finished task means a bug stopped them.
        if task.done():
            raise RuntimeError(f"{name} stopped")

    return check


def create_worker_app(
    settings: Settings | None = None, *, worker_id: str | None = None, clock: Clock | None = None
) -> FastAPI:
    """``clock``: the link checker's time (tests move it across days)."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        setup_tracing(SERVICE, settings.otel_exporter_otlp_endpoint, sample_ratio=settings.traces_sample_ratio)
        # Renderer first: with ENRICHMENT_BROWSER=required a missing browser must stop start-up.
        renderer = await BrowserRenderer.create(
            mode=settings.browser,
            allow_private_networks=settings.allow_private_networks,
            timeout_seconds=settings.fetch_timeout_seconds * 2,
            max_concurrency=settings.worker_concurrency,
        )
        fetcher = SafeFetcher(
            timeout_seconds=settings.fetch_timeout_seconds,
            user_agent=settings.user_agent,
            max_body_bytes=settings.max_page_bytes,
            allow_private_networks=settings.allow_private_networks,
        )
        # Link checks have a pool of their own: a slow site being checked never holds an enrichment's connection.
        link_fetcher = SafeFetcher(
            timeout_seconds=settings.fetch_timeout_seconds,
            user_agent=settings.user_agent,
            allow_private_networks=settings.allow_private_networks,
        )
        analyzer = build_analyzer(
            openai_api_key=settings.openai_api_key, openai_base_url=settings.openai_base_url, model=settings.llm_model
        )
        # The worker writes enrichment events to the outbox too; the backbone's relay stands by (advisory
        # lock) so they are published even when no API replica runs. A session per job slot, two to spare.
        try:
            async with service_backbone(
                app,
                service=SERVICE,
                settings=settings,
                database_url=settings.database_url,
                min_connections=settings.worker_concurrency + 2,
            ) as backbone:
                worker = JobWorker(
                    sessions=backbone.sessions,
                    database_url=settings.database_url,
                    enricher=Enricher(
                        fetcher=fetcher,
                        analyzer=analyzer,
                        renderer=renderer,
                        max_image_pixels=settings.preview_max_image_pixels,
                    ),
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
                app.state.settings = settings
                app.state.worker = worker
                # Started on the backbone's tasks: slots hand their attempts back before the pool closes.
                worker_task = backbone.tasks.start("job-worker", worker.run())
                app.state.readiness_checks.append(("job-worker", _running(worker_task)))
                if settings.link_check_enabled:
                    checker = LinkChecker(
                        sessions=backbone.sessions,
                        fetcher=link_fetcher,
                        clock=clock or SystemClock(),
                        config=LinkCheckConfig(
                            policy=settings.link_policy,
                            rate_per_second=settings.link_check_rate_per_second,
                            timeout_seconds=settings.fetch_timeout_seconds,
                            poll_seconds=settings.worker_poll_seconds,
                        ),
                        worker_id=app.state.worker.worker_id,
                    )
                    app.state.link_checker = checker
                    LINK_CHECK_INTERVAL.set(settings.link_policy.interval.total_seconds())
                    checker_task = backbone.tasks.start("link-checker", checker.run())
                    app.state.readiness_checks.append(("link-checker", _running(checker_task, "the link checker")))
                yield
        finally:
            await link_fetcher.aclose()
            await fetcher.aclose()
            await analyzer.aclose()
            if renderer is not None:
                await renderer.close()

    return create_service_app(
        service=SERVICE, title="Enrichment worker", lifespan=lifespan, routers=[], settings=settings
    )
