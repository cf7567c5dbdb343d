"""``make run`` heals: PostgreSQL and the broker SIGKILLed under a supervised stack come
back by themselves on their ports, the database with its data, the broker with its topics at the
configured partition count (also when a client re-created one by auto-creation first)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import asyncpg
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from common.events import TOPICS
from devstack import testing
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
    # A producer racing the re-creation may auto-create a topic with the broker's default partitions;
    # the healer's topic check puts the configured count back either way.
    assert await eventually(lambda: _configured_partitions(stack.kafka_bootstrap), timeout=HANG_GUARD)
    assert stack.healer is not None
    assert stack.healer.restarts("postgres") == 1 and stack.healer.restarts("kafka") == 1


async def _configured_partitions(bootstrap: str) -> bool:
    """Every topic there with the configured partitions. Topics are described only once all are listed:
    a metadata request naming a missing topic would auto-create it with the broker's default partitions
    and race the healer's re-creation."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        await admin.start()
        if not set(TOPICS) <= set(await admin.list_topics()):
            return False
        return all(len(t["partitions"]) == 3 for t in await admin.describe_topics(list(TOPICS)))
    except (KafkaError, OSError):
        return False  # not listening yet
    finally:
        with contextlib.suppress(Exception):
            await admin.close()


def test_launcher_restarts_a_killed_postgres(tmp_path: Path) -> None:
    """``python -m devstack infra`` (``make infra``/``make run``'s launcher) heals on its main thread."""
    import subprocess
    import sys
    import threading

    import psutil

    from devstack.stack import free_ports

    env = {k: v for k, v in os.environ.items() if not k.startswith("DATABASE_URL_")}
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    pg_port, kafka_port = free_ports(2)
    with scratch_data_dir("devstack-launcher-", fallback=tmp_path / "data") as data_dir:
        env |= {
            "DEVSTACK_DATA_DIR": str(data_dir.parent if os.geteuid() == 0 else data_dir),
            "DEVSTACK_PG_PORT": str(pg_port),
            "DEVSTACK_KAFKA_PORT": str(kafka_port),
        }
        launcher = subprocess.Popen(
            [sys.executable, "-m", "devstack", "infra"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        lines: list[str] = []
        assert launcher.stdout is not None
        stdout = launcher.stdout
        reader = threading.Thread(target=lambda: lines.extend(iter(stdout.readline, "")), daemon=True)
        reader.start()
        try:
            wait_until(lambda: any("Infrastructure ready" in line for line in lines), "the launcher to start")
            postmaster = next(p for p in psutil.Process(launcher.pid).children() if p.name() == "postgres")
            postmaster.kill()
            wait_until(lambda: any("devstack: postgres restarted" in line for line in lines), "postgres restarted")
            wait_until(
                lambda: any(
                    p.name() == "postgres" and p.pid != postmaster.pid for p in psutil.Process(launcher.pid).children()
                ),
                "a new postmaster",
            )
        finally:
            launcher.send_signal(signal.SIGTERM)
            code = launcher.wait(HANG_GUARD)
        assert code == 0, "".join(lines[-40:])
