"""The backbone every process runs, built in its lifespan and torn down in reverse.

:func:`process_backbone` is what every process runs, the gateway included: its readiness checks (the
topics it uses found with ``KAFKA_TOPIC_PARTITIONS`` partitions, and its own), the broker reachability
metric, and the background tasks, which stop when the process does. :func:`service_backbone` is that
plus what a database-owning process runs: engine and sessions, the outbox relay, optionally a consumer,
and the database readiness check.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from common.app import ReadinessCheck, watch_broker
from common.consumer import BatchHandler, ConsumerRunner, EventFilter, Handler
from common.db import DatabaseReadiness, Deadlines, SessionFactory, create_engine, create_session_factory
from common.events import PUBLISHED_TOPICS
from common.outbox import OutboxRelay
from common.settings import CommonSettings
from common.tasks import BackgroundTasks
from common.topics import TopicCheck


@dataclass(frozen=True, slots=True)
class ProcessBackbone:
    tasks: BackgroundTasks
    topics: TopicCheck


@asynccontextmanager
async def process_backbone(
    app: FastAPI,
    *,
    service: str,
    settings: CommonSettings,
    topics: Iterable[str],
    checks_before: Sequence[tuple[str, ReadinessCheck]] = (),
    checks_after: Sequence[tuple[str, ReadinessCheck]] = (),
) -> AsyncIterator[ProcessBackbone]:
    """Start what every process runs; ``app.state.readiness_checks`` gets ``checks_before``, the topic
    check of ``topics``, then ``checks_after``. The process adds its own loops to ``tasks``: they stop
    (in reverse) when this ends, before whatever the process opened around it is closed."""
    topic_check = TopicCheck(
        service=service,
        bootstrap=settings.kafka_bootstrap_servers,
        topics=topics,
        partitions=settings.kafka_topic_partitions,
    )
    # The broker is not a readiness dependency once the topics were found as configured at start (0136):
    # its state is the kafka_broker_reachable metric.
    app.state.readiness_checks = [*checks_before, ("topics", topic_check), *checks_after]
    tasks = BackgroundTasks()
    tasks.start("topic-check", topic_check.run())
    tasks.start("broker-probe", watch_broker(service, settings.kafka_bootstrap_servers))
    try:
        yield ProcessBackbone(tasks=tasks, topics=topic_check)
    finally:
        await tasks.stop()


@dataclass(frozen=True, slots=True)
class Backbone:
    engine: AsyncEngine
    sessions: SessionFactory
    relay: OutboxRelay
    consumer: ConsumerRunner | None
    tasks: BackgroundTasks


@asynccontextmanager
async def service_backbone(
    app: FastAPI,
    *,
    service: str,
    settings: CommonSettings,
    database_url: str,
    handlers: Mapping[str, Handler] | None = None,
    consumer_group: str | None = None,
    event_filters: Mapping[str, EventFilter] | None = None,
    batch_handlers: Mapping[str, BatchHandler] | None = None,
    min_connections: int = 0,
) -> AsyncIterator[Backbone]:
    """Start the process's database and event plumbing; ``app.state`` gets sessions, relay, consumer.

    ``min_connections`` raises the pool size and the database gate to at least that many, for a process
    whose own loops each hold a connection (the enrichment worker's job slots). The process adds its own
    background tasks to ``Backbone.tasks``: they stop before the engine they use is disposed.
    """
    engine = create_engine(
        database_url,
        pool_size=max(settings.db_pool_size, min_connections),
        deadlines=Deadlines.of(settings),
        service=service,
    )
    sessions = create_session_factory(engine, concurrency=max(settings.db_concurrency, min_connections))
    relay = OutboxRelay(
        service=service, engine=engine, database_url=database_url, bootstrap=settings.kafka_bootstrap_servers
    )
    consumer = None
    if handlers:
        consumer = ConsumerRunner(
            service=service,
            bootstrap=settings.kafka_bootstrap_servers,
            sessions=sessions,
            handlers=handlers,
            group_id=consumer_group,
            filters=event_filters,
            batch_handlers=batch_handlers,
        )
    app.state.sessions, app.state.relay, app.state.consumer = sessions, relay, consumer
    try:
        async with process_backbone(
            app,
            service=service,
            settings=settings,
            topics=[*PUBLISHED_TOPICS.get(service, ()), *(handlers or {}), *(batch_handlers or {})],
            checks_before=[("database", DatabaseReadiness(engine, grace_seconds=settings.db_ready_grace_seconds))],
        ) as base:
            base.tasks.start("outbox-relay", relay.run())
            if consumer is not None:
                base.tasks.start("consumer", consumer.run())
            yield Backbone(engine=engine, sessions=sessions, relay=relay, consumer=consumer, tasks=base.tasks)
    finally:
        await engine.dispose()
