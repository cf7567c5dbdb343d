"""What every database-owning service process runs: engine and sessions, the outbox relay, optionally a
consumer, the database readiness check and the broker reachability metric — built in the lifespan, torn
down in reverse."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from common.app import watch_broker
from common.consumer import BatchHandler, ConsumerRunner, EventFilter, Handler
from common.db import DatabaseReadiness, Deadlines, SessionFactory, create_engine, create_session_factory
from common.events import PUBLISHED_TOPICS
from common.outbox import OutboxRelay
from common.settings import CommonSettings
from common.tasks import BackgroundTasks
from common.topics import TopicCheck


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
    tasks = BackgroundTasks()
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
    topics = TopicCheck(
        service=service,
        bootstrap=settings.kafka_bootstrap_servers,
        topics=[*PUBLISHED_TOPICS.get(service, ()), *(handlers or {}), *(batch_handlers or {})],
        partitions=settings.kafka_topic_partitions,
    )
    # The broker is not a readiness dependency once the topics were found as configured at start (0136):
    # its state is the kafka_broker_reachable metric.
    app.state.readiness_checks = [
        ("database", DatabaseReadiness(engine, grace_seconds=settings.db_ready_grace_seconds)),
        ("topics", topics),
    ]
    tasks.start("topic-check", topics.run())
    tasks.start("broker-probe", watch_broker(service, settings.kafka_bootstrap_servers))
    tasks.start("outbox-relay", relay.run())
    if consumer is not None:
        tasks.start("consumer", consumer.run())
    try:
        yield Backbone(engine=engine, sessions=sessions, relay=relay, consumer=consumer, tasks=tasks)
    finally:
        await tasks.stop()
        await engine.dispose()
