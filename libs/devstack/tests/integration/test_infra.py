"""The embedded stack for real: PostgreSQL, the broker, the supervisor and the launcher's checks."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import socket
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import asyncpg
import psutil
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from common.events import TOPICS
from common.topics import partition_counts
from devstack import testing
from devstack.broker import AUTO_CREATE_PARTITIONS, ensure_topics
from devstack.errors import PortBusyError, StartupError
from devstack.postgres import EmbeddedPostgres
from devstack.processes import Supervisor
from devstack.stack import DATABASES, SERVICES, Stack, StackConfig, free_port, free_ports

HANG_GUARD = 30.0  # seconds; only keeps a broken test from hanging, never asserts on speed


def libpq(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


def is_alive(proc: psutil.Process) -> bool:
    # The container's init may never reap orphans, so a zombie counts as gone.
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_until(predicate: Callable[[], bool], what: str) -> None:
    testing.wait_until(predicate, what, timeout=HANG_GUARD)


@pytest.fixture
def listening_socket() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


# -- PostgreSQL -------------------------------------------------------------------------------------


async def test_infra_has_every_service_database(infra: Stack) -> None:
    for db in DATABASES:
        conn = await asyncpg.connect(libpq(infra.dsn(db)))
        try:
            assert await conn.fetchval("SELECT current_database()") == db
        finally:
            await conn.close()
    assert infra.env["DATABASE_URL_AUTH"] == infra.dsn("auth")
    assert infra.env["KAFKA_BOOTSTRAP_SERVERS"] == infra.kafka_bootstrap


async def test_postgres_reuses_its_data_dir_and_ignores_a_stale_pid_file(pg_data_dir: Path) -> None:
    data = pg_data_dir
    with EmbeddedPostgres(data, free_port(), durable=False) as pg:
        pg.ensure_databases(["notes"])
        pg.ensure_databases(["notes"])  # idempotent
        conn = await asyncpg.connect(pg.libpq_dsn("notes"))
        await conn.execute("CREATE TABLE note (body text); INSERT INTO note VALUES ('kept')")
        await conn.close()
    # A crashed run leaves postmaster.pid behind; a recycled pid makes PostgreSQL think it still runs.
    (data / "postmaster.pid").write_text(f"{os.getpid()}\n{data}\n")

    with EmbeddedPostgres(data, free_port(), durable=False) as pg:
        conn = await asyncpg.connect(pg.libpq_dsn("notes"))
        assert await conn.fetchval("SELECT body FROM note") == "kept"
        await conn.close()


async def test_postgres_of_a_killed_launcher_does_not_block_the_next_start(pg_data_dir: Path) -> None:
    data = pg_data_dir
    launcher_code = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from devstack.postgres import EmbeddedPostgres
        from devstack.processes import Supervisor

        pg = EmbeddedPostgres(Path({str(data)!r}), {free_port()}, durable=False, supervisor=Supervisor(output=sys.stderr))
        pg.start()
        pg.ensure_databases(["notes"])
        pg.psql("notes", "CREATE TABLE note (body text); INSERT INTO note VALUES ('survived')")
        print(pg.process.pid, flush=True)
        time.sleep(600)
        """
    )
    launcher = subprocess.Popen([sys.executable, "-c", launcher_code], stdout=subprocess.PIPE, text=True)
    assert launcher.stdout is not None
    postmaster = psutil.Process(int(launcher.stdout.readline()))
    launcher.kill()
    launcher.wait()
    wait_until(lambda: not is_alive(postmaster), "the orphaned postmaster to shut down")

    with EmbeddedPostgres(data, free_port(), durable=False) as pg:
        conn = await asyncpg.connect(pg.libpq_dsn("notes"))
        assert await conn.fetchval("SELECT body FROM note") == "survived"
        await conn.close()


# -- broker -----------------------------------------------------------------------------------------


async def roundtrip(bootstrap: str, topic: str, value: bytes) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=False)
    await producer.start()
    try:
        await producer.send_and_wait(topic, value, key=b"user-1")
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        async with asyncio.timeout(HANG_GUARD):
            seen: list[bytes | None] = []
            while value not in seen:
                batch = await consumer.getmany(timeout_ms=500)
                seen += [message.value for messages in batch.values() for message in messages]
    finally:
        await consumer.stop()


async def test_broker_roundtrip(infra: Stack) -> None:
    topic = "devstack.test.roundtrip"
    await ensure_topics(infra.kafka_bootstrap, [topic])
    await ensure_topics(infra.kafka_bootstrap, [topic])  # existing topics are fine
    await roundtrip(infra.kafka_bootstrap, topic, b"hello")


async def test_the_broker_auto_creates_topics_with_the_partition_count_we_create_them_with(infra: Stack) -> None:
    """A client that reaches a restarted broker before the topics exist makes them itself; they must be
    shaped as ours. A broker upgrade that changes its default count fails here, not in production."""
    topic = f"devstack.test.auto-{uuid.uuid4().hex[:8]}"
    producer = AIOKafkaProducer(bootstrap_servers=infra.kafka_bootstrap, enable_idempotence=False)
    await producer.start()
    try:
        async with asyncio.timeout(HANG_GUARD):
            await producer.send_and_wait(topic, b"first", key=b"user-1")
    finally:
        await producer.stop()
    assert (await partition_counts(infra.kafka_bootstrap))[topic] == AUTO_CREATE_PARTITIONS
    await ensure_topics(infra.kafka_bootstrap, [topic])  # as configured: kept, not an error


async def test_a_topic_with_another_partition_count_is_an_error_and_is_kept(infra: Stack) -> None:
    topic = f"devstack.test.shape-{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=infra.kafka_bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
    finally:
        await admin.close()
    with pytest.raises(StartupError, match=f"{topic} has 2 partitions, {AUTO_CREATE_PARTITIONS} expected"):
        await ensure_topics(infra.kafka_bootstrap, [topic], retry_for=1.0)
    assert (await partition_counts(infra.kafka_bootstrap))[topic] == 2


async def test_broker_restarts_on_the_same_port_with_topics(infra: Stack) -> None:
    bootstrap = infra.kafka_bootstrap
    host, port = bootstrap.rsplit(":", 1)
    infra.stop_broker()
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=2).close()

    infra.start_broker()  # called inside a running loop on purpose: async tests do exactly this

    assert infra.kafka_bootstrap == bootstrap
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        assert set(TOPICS) <= set(await admin.list_topics())
    finally:
        await admin.close()
    topic = "devstack.test.after-restart"
    await ensure_topics(bootstrap, [topic])
    await roundtrip(bootstrap, topic, b"back")


# -- launcher checks --------------------------------------------------------------------------------


def test_busy_port_is_reported_before_anything_starts(tmp_path: Path, listening_socket: int) -> None:
    config = StackConfig.for_tests(tmp_path, services=True)
    config.service_ports["gateway"] = listening_socket
    stack = Stack(config)

    with pytest.raises(PortBusyError) as raised:
        stack.start()

    assert str(raised.value) == (
        f"port {listening_socket} (gateway) is already in use; set GATEWAY_PORT to another port"
    )
    assert stack.supervisor.children == ()
    assert not (tmp_path / "postgres").exists()


def test_cli_reports_a_busy_port_in_one_line_and_exits_2(tmp_path: Path, listening_socket: int) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DATABASE_URL_")}
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    pg_port, kafka_port, *ports = free_ports(2 + 2 * len(SERVICES))
    env |= {"DEVSTACK_DATA_DIR": str(tmp_path), "DEVSTACK_PG_PORT": str(pg_port)}
    env["DEVSTACK_KAFKA_PORT"] = str(kafka_port)
    env |= {f"{spec.env_prefix}_PORT": str(port) for spec, port in zip(SERVICES, ports, strict=False)}
    metrics_ports = ports[len(SERVICES) :]
    env |= {spec.metrics_port_env: str(port) for spec, port in zip(SERVICES, metrics_ports, strict=True)}
    env["AUTH_PORT"] = str(listening_socket)

    result = subprocess.run(
        [sys.executable, "-m", "devstack", "run"], env=env, capture_output=True, text=True, timeout=HANG_GUARD
    )

    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"devstack: port {listening_socket} (auth) is already in use; set AUTH_PORT to another port"
    ]


# -- supervisor -------------------------------------------------------------------------------------


def test_supervisor_prefixes_each_line_with_the_child_name() -> None:
    out = io.StringIO()
    supervisor = Supervisor(output=out, name_width=8)
    child = supervisor.spawn("echo", [sys.executable, "-c", "print('hello'); print('world')"])

    assert child.wait(HANG_GUARD) == 0
    supervisor.stop()

    assert out.getvalue().splitlines() == ["[echo]     hello", "[echo]     world"]
    assert child.tail() == ["hello", "world"]


def test_supervisor_stop_leaves_no_process_behind() -> None:
    supervisor = Supervisor(output=io.StringIO())
    server = supervisor.spawn(
        "http",
        [sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1"],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    stubborn_code = textwrap.dedent(
        """
        import signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        # Own session: out of reach of a process-group kill, only the descendant sweep finds it.
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
        print("ready", flush=True)
        time.sleep(600)
        """
    )
    stubborn = supervisor.spawn("stubborn", [sys.executable, "-c", stubborn_code])
    wait_until(lambda: "ready" in stubborn.tail(), "the stubborn child")
    wait_until(lambda: any("Serving HTTP" in line for line in server.tail()), "http.server")
    procs = [psutil.Process(server.pid), psutil.Process(stubborn.pid)]
    procs += procs[1].children(recursive=True)
    assert len(procs) == 3

    supervisor.stop(timeout=1.0)

    assert [p for p in procs if is_alive(p)] == []
    assert server.returncode == -signal.SIGTERM
    assert stubborn.returncode == -signal.SIGKILL
    assert supervisor.children == ()


def test_children_die_with_a_killed_launcher() -> None:
    launcher_code = textwrap.dedent(
        """
        import sys, time
        from devstack.processes import Supervisor

        child = Supervisor(output=sys.stderr).spawn("sleeper", [sys.executable, "-c", "import time; time.sleep(600)"])
        print(child.pid, flush=True)
        time.sleep(600)
        """
    )
    launcher = subprocess.Popen([sys.executable, "-c", launcher_code], stdout=subprocess.PIPE, text=True)
    assert launcher.stdout is not None
    child = psutil.Process(int(launcher.stdout.readline()))
    assert is_alive(child)

    launcher.kill()
    launcher.wait()

    wait_until(lambda: not is_alive(child), "the orphaned child to die")
