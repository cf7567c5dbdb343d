"""``make run`` heals: PostgreSQL and the broker SIGKILLed under a supervised stack come
back by themselves on their ports, the database with its data, the broker with its topics at the
configured partition count (the one the broker itself gives a topic a client makes by first use)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import asyncpg
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from common.events import TOPICS
from common.topics import partition_counts
from devstack import testing
from devstack.broker import AUTO_CREATE_PARTITIONS
from devstack.postgres import scratch_data_dir
from devstack.stack import Stack, StackConfig
from devstack.testing import eventually

HANG_GUARD = 120.0  # seconds; only keeps a broken test from hanging, never asserts on speed


def wait_until(predicate: Callable[[], bool], what: str) -> None:
    testing.wait_until(predicate, what, timeout=HANG_GUARD, interval=0.1)


@pytest.fixture
def supervised_infra(tmp_path: Path) -> Iterator[Stack]:
    with scratch_data_dir("devstack-heal-", fallback=tmp_path / "postgres") as pg_dir:
        stack = Stack(StackConfig.for_tests(tmp_path, services=False, pg_data_dir=pg_dir))
        stack.start()
        try:
            stack.supervise(interval=0.2)
            yield stack
        finally:
            stack.stop()


def _pid(stack: Stack, name: str) -> int:
    component = stack.postgres if name == "postgres" else stack.broker
    assert component is not None and component.process is not None
    return component.process.pid


async def _query(stack: Stack) -> int:
    conn = await asyncpg.connect(stack.dsn("auth").replace("postgresql+asyncpg://", "postgresql://"))
    try:
        return int(await conn.fetchval("SELECT count(*) FROM pg_tables WHERE tablename = 'healing_probe'"))
    finally:
        await conn.close()


async def _query_when_up(stack: Stack) -> int | None:
    try:
        return await _query(stack)
    except (OSError, asyncpg.PostgresError):
        return None  # still starting up / in recovery


async def test_killed_postgres_and_broker_are_restarted(supervised_infra: Stack) -> None:
    stack = supervised_infra
    stack.postgres.psql("auth", "CREATE TABLE healing_probe (id int)")  # type: ignore[union-attr]
    # The test server runs with synchronous_commit=off: a commit reaches the WAL file within ~0.6 s, so a
    # postmaster killed sooner loses it. CHECKPOINT writes it out now (make run's server is durable).
    stack.postgres.psql("auth", "CHECKPOINT")  # type: ignore[union-attr]

    old = _pid(stack, "postgres")
    os.kill(old, signal.SIGKILL)
    await asyncio.to_thread(
        wait_until,
        lambda: stack.postgres.running and _pid(stack, "postgres") != old,  # type: ignore[union-attr]
        "postgres restarted",
    )
    assert await eventually(lambda: _query_when_up(stack), timeout=HANG_GUARD) == 1  # same data: nothing lost

    old = _pid(stack, "kafka")
    os.kill(old, signal.SIGKILL)
    await asyncio.to_thread(
        wait_until,
        lambda: stack.broker.running and _pid(stack, "kafka") != old,  # type: ignore[union-attr]
        "broker restarted",
    )
    # The healer starts the broker, then re-creates the topics: wait for both before producing.
    assert await eventually(lambda: _configured_partitions(stack.kafka_bootstrap), timeout=HANG_GUARD)
    producer = AIOKafkaProducer(bootstrap_servers=stack.kafka_bootstrap, enable_idempotence=False)
    await producer.start()
    try:
        await producer.send_and_wait(TOPICS[0], b"x")
    finally:
        await producer.stop()
    # A producer racing the creation makes the topic with the broker's own count, which is ours.
    assert await eventually(lambda: _configured_partitions(stack.kafka_bootstrap), timeout=HANG_GUARD)
    assert stack.healer is not None
    assert stack.healer.restarts("postgres") == 1 and stack.healer.restarts("kafka") == 1


async def _configured_partitions(bootstrap: str) -> bool:
    """Every topic there with the configured partitions (read without naming a topic: no auto-creation)."""
    try:
        counts = await partition_counts(bootstrap)
    except (KafkaError, OSError):
        return False  # not listening yet
    return all(counts.get(topic) == AUTO_CREATE_PARTITIONS for topic in TOPICS)
