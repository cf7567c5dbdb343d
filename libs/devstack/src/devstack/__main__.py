"""``python -m devstack run|infra`` — the launcher behind ``make run``.

``run``   PostgreSQL, broker, migrations and every service; blocks until Ctrl-C / SIGTERM.
``infra`` PostgreSQL, broker and migrations only; prints the connection variables (for benches and
          for running one service by hand against the shared infrastructure).

Once started, the launcher supervises like a kubelet (:mod:`devstack.healing`): a child that dies —
PostgreSQL, the broker, a service, the enrichment worker — is restarted with backoff. A restarted broker
is a new cluster (memory storage): every service is stopped, the broker started, its topics created and
the services started again, as at a first start.

Exit codes: 0 after a requested stop, 1 when something failed to start, 2 for a configuration problem
(busy port, bad variable) detected before anything was started.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from devstack.errors import ConfigError, DataDirInUseError, PortBusyError, StartupError
from devstack.stack import SERVICES, Stack, StackConfig, database_url_env


class _Signals:
    """First SIGINT/SIGTERM: interrupt start-up or end the wait. Later ones: ignored while stopping."""

    def __init__(self) -> None:
        self.stop_requested = threading.Event()
        self.running = False

    def install(self) -> None:
        signal.signal(signal.SIGINT, self._handle)
        signal.signal(signal.SIGTERM, self._handle)

    def uninstall(self) -> None:
        # Once everything is stopped, a late signal should just end the process, not raise into
        # interpreter shutdown.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.stop_requested.is_set():
            print("devstack: already stopping, please wait", file=sys.stderr, flush=True)
            return
        self.stop_requested.set()
        if not self.running:
            # Start-up is a chain of blocking calls; an exception is the only way to unwind it, and
            # Stack.start() stops whatever it had already started on the way out.
            raise KeyboardInterrupt


def _print_banner(stack: Stack, *, services: bool) -> None:
    urls = stack.urls
    lines: list[str] = []
    if services:
        lines.append(f"Bookmark platform ready at {urls.gateway}")
        lines += [f"  {spec.name:<18} {urls.services[spec.name]}" for spec in SERVICES]
    else:
        skipped = [db for db in urls.database_urls if db not in stack.migrated]
        if skipped:
            lines.append(f"Not migrated (no <service>.migrate module yet): {', '.join(skipped)}")
        lines.append("Infrastructure ready (PostgreSQL, broker, migrations). Connection variables:")
    lines += [f"  {database_url_env(db)}={url}" for db, url in urls.database_urls.items()]
    lines.append(f"  KAFKA_BOOTSTRAP_SERVERS={urls.kafka_bootstrap}")
    lines.append("Press Ctrl-C to stop.")
    print("\n".join(lines), flush=True)


def _run(services: bool) -> int:
    signals = _Signals()
    signals.install()
    try:
        return _run_stack(signals, services=services)
    finally:
        signals.uninstall()


def _run_stack(signals: _Signals, *, services: bool) -> int:
    try:
        config = StackConfig.from_env(services=services)
        stack = Stack(config)
    except ConfigError as exc:
        print(f"devstack: {exc}", file=sys.stderr)
        return 2
    try:
        stack.start()
    except (PortBusyError, DataDirInUseError, ConfigError) as exc:
        print(f"devstack: {exc}", file=sys.stderr)
        return 2
    except StartupError as exc:
        print(f"devstack: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("devstack: interrupted during start-up; stopped", file=sys.stderr)
        return 0
    code = 0
    try:
        signals.running = True
        _print_banner(stack, services=services)
        # Healing runs here, on the main thread: the children it restarts must outlive their spawner.
        while not signals.stop_requested.wait(0.5):
            for name in stack.heal():
                print(f"devstack: {name} restarted", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        # A signal that landed in the instant between start-up finishing and `running` being set.
        pass
    finally:
        signals.stop_requested.set()
        print("devstack: stopping…", file=sys.stderr, flush=True)
        stack.stop()
        print("devstack: stopped", file=sys.stderr, flush=True)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack", description="Run the local bookmark platform.")
    parser.add_argument(
        "command",
        nargs="?",
        default="run",
        choices=("run", "infra"),
        help="run: the whole platform (default); infra: PostgreSQL, broker and migrations only",
    )
    args = parser.parse_args(argv)
    return _run(services=args.command == "run")


if __name__ == "__main__":
    sys.exit(main())
