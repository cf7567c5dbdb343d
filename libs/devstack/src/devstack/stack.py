"""The whole local stack: PostgreSQL, broker, migrations and the service processes, in that order.

``Stack(config).start()`` brings everything up and returns once every service answers ``/readyz``;
``stop()`` takes it down in reverse. ``heal()`` restarts whatever died (:mod:`devstack.healing`);
``make run`` calls it twice a second, tests may run it on a thread with ``supervise()``. The same
class backs ``make run`` (``StackConfig.from_env``) and the pytest fixtures (``StackConfig.for_tests``:
free ports, a private data directory).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self, TextIO

from devstack._aio import run_blocking
from devstack.broker import AUTO_CREATE_PARTITIONS, EmbeddedBroker, ensure_topics_blocking
from devstack.errors import ConfigError, MigrationError, PortBusyError, ServiceStartError
from devstack.healing import HEALTHY_SECONDS, Component, Healer
from devstack.ports import lease_ports
from devstack.postgres import EmbeddedPostgres
from devstack.processes import ChildProcess, Supervisor

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DATABASES",
    "SERVICES",
    "ServiceSpec",
    "Stack",
    "StackConfig",
    "StackUrls",
    "check_ports",
    "free_port",
    "free_ports",
]


@dataclass(frozen=True)
class ServiceSpec:
    """A service process: ``python -m <module>`` listening on ``<env_prefix>_HOST``/``_PORT`` for clients
    and on ``<env_prefix>_METRICS_PORT`` (same host) for Prometheus."""

    name: str
    module: str
    env_prefix: str
    default_port: int
    default_metrics_port: int

    @property
    def url_env(self) -> str:
        return f"{self.env_prefix}_URL"

    @property
    def metrics_port_env(self) -> str:
        return f"{self.env_prefix}_METRICS_PORT"


SERVICES: tuple[ServiceSpec, ...] = (
    ServiceSpec("auth", "auth", "AUTH", 8081, 9081),
    ServiceSpec("bookmarks", "bookmarks", "BOOKMARKS", 8082, 9082),
    ServiceSpec("enrichment", "enrichment", "ENRICHMENT", 8083, 9083),
    ServiceSpec("enrichment-worker", "enrichment.worker", "ENRICHMENT_WORKER", 8084, 9084),
    ServiceSpec("gateway", "gateway", "GATEWAY", 8080, 9080),
)
# The gateway starts last: it is the clients' entry point, so once it is ready everything is.
_START_PHASES: tuple[tuple[str, ...], ...] = (
    ("auth", "bookmarks", "enrichment", "enrichment-worker"),
    ("gateway",),
)
# One database per service, named after it and migrated by ``python -m <name>.migrate``.
DATABASES: tuple[str, ...] = ("auth", "bookmarks", "enrichment")

DEFAULT_HOST = "127.0.0.1"
# The web app's build (`make web`), served by the gateway when it exists.
WEB_DIST = Path(__file__).resolve().parents[4] / "web" / "dist"
WEB_DIR_ENV = "GATEWAY_WEB_DIR"
DEFAULT_PG_PORT = 5442
DEFAULT_KAFKA_PORT = 19092
PG_PORT_ENV = "DEVSTACK_PG_PORT"
KAFKA_PORT_ENV = "DEVSTACK_KAFKA_PORT"
DATA_DIR_ENV = "DEVSTACK_DATA_DIR"
KAFKA_ENV = "KAFKA_BOOTSTRAP_SERVERS"
PARTITIONS_ENV = "KAFKA_TOPIC_PARTITIONS"
READY_TIMEOUT_ENV = "DEVSTACK_READY_TIMEOUT"

_SPECS = {spec.name: spec for spec in SERVICES}


def database_url_env(db: str) -> str:
    return f"DATABASE_URL_{db.upper()}"


def _default_ports() -> dict[str, int]:
    return {spec.name: spec.default_port for spec in SERVICES}


def _default_metrics_ports() -> dict[str, int]:
    return {spec.name: spec.default_metrics_port for spec in SERVICES}


@dataclass
class StackConfig:
    """What to run and where. ``database_urls`` / ``kafka_bootstrap`` set mean "external, don't start".

    ``pg_data_dir`` defaults to ``<data_dir>/postgres``; see :func:`devstack.postgres.scratch_data_dir`
    for why tests running as root put it elsewhere.
    """

    data_dir: Path
    host: str = DEFAULT_HOST
    pg_port: int = DEFAULT_PG_PORT
    kafka_port: int = DEFAULT_KAFKA_PORT
    service_ports: dict[str, int] = field(default_factory=_default_ports)
    metrics_ports: dict[str, int] = field(default_factory=_default_metrics_ports)
    service_hosts: dict[str, str] = field(default_factory=dict)
    database_urls: dict[str, str] | None = None
    kafka_bootstrap: str | None = None
    topic_partitions: int = AUTO_CREATE_PARTITIONS
    services: bool = True
    skip_missing_migrations: bool = False
    extra_env: dict[str, str] = field(default_factory=dict)
    inherit_env: bool = True
    durable_postgres: bool = True
    ready_timeout: float = 60.0
    stop_timeout: float = 10.0
    migration_timeout: float = 120.0
    log_dir: Path | None = None
    pg_data_dir: Path | None = None
    output: TextIO | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, services: bool = True) -> StackConfig:
        """The configuration of ``make run``: defaults overridden by the environment (docs/configuration.md)."""
        env = os.environ if environ is None else environ
        data_dir = Path(env[DATA_DIR_ENV]) if env.get(DATA_DIR_ENV) else _repo_root() / ".data"
        ports = {spec.name: _port(env, f"{spec.env_prefix}_PORT", spec.default_port) for spec in SERVICES}
        metrics = {spec.name: _port(env, spec.metrics_port_env, spec.default_metrics_port) for spec in SERVICES}
        hosts = {spec.name: env[f"{spec.env_prefix}_HOST"] for spec in SERVICES if env.get(f"{spec.env_prefix}_HOST")}
        external_dbs = {db: env[database_url_env(db)] for db in DATABASES if env.get(database_url_env(db))}
        if external_dbs and len(external_dbs) != len(DATABASES):
            missing = ", ".join(database_url_env(db) for db in DATABASES if db not in external_dbs)
            raise ConfigError(f"{missing} not set: set every DATABASE_URL_* (external PostgreSQL) or none (embedded)")
        return cls(
            data_dir=data_dir.absolute(),
            pg_port=_port(env, PG_PORT_ENV, DEFAULT_PG_PORT),
            kafka_port=_port(env, KAFKA_PORT_ENV, DEFAULT_KAFKA_PORT),
            service_ports=ports,
            metrics_ports=metrics,
            service_hosts=hosts,
            database_urls=external_dbs or None,
            kafka_bootstrap=env.get(KAFKA_ENV) or None,
            topic_partitions=_positive(env, PARTITIONS_ENV, AUTO_CREATE_PARTITIONS),
            services=services,
            skip_missing_migrations=not services,
            ready_timeout=float(env.get(READY_TIMEOUT_ENV, "120")),
        )

    @classmethod
    def for_tests(
        cls,
        data_dir: Path,
        *,
        services: bool = True,
        extra_env: Mapping[str, str] | None = None,
        output: TextIO | None = None,
        pg_data_dir: Path | None = None,
    ) -> StackConfig:
        """Private data directory, leased ports (:mod:`devstack.ports`), non-durable PostgreSQL: never
        collides with ``make run`` nor with another test stack."""
        count = 2 + (2 * len(SERVICES) if services else 0)
        pg_port, kafka_port, *service_ports = lease_ports(count, partial(port_is_free, DEFAULT_HOST))
        names = [s.name for s in SERVICES]
        ports = dict(zip(names, service_ports[: len(names)], strict=True)) if services else {}
        metrics = dict(zip(names, service_ports[len(names) :], strict=True)) if services else {}
        return cls(
            data_dir=Path(data_dir).absolute(),
            pg_port=pg_port,
            kafka_port=kafka_port,
            service_ports=ports or _default_ports(),
            metrics_ports=metrics or _default_metrics_ports(),
            services=services,
            skip_missing_migrations=not services,
            extra_env=dict(extra_env or {}),
            durable_postgres=False,
            output=output,
            pg_data_dir=pg_data_dir,
            # Tests share two cores with the test runner and other suites: start-up can be slow.
            ready_timeout=float(os.environ.get(READY_TIMEOUT_ENV, "240")),
        )

    def service_host(self, name: str) -> str:
        return self.service_hosts.get(name, self.host)


@dataclass(frozen=True)
class StackUrls:
    """Where everything is; ``gateway`` is None for an infrastructure-only stack."""

    gateway: str | None
    services: dict[str, str]
    database_urls: dict[str, str]
    kafka_bootstrap: str


class Stack:
    """The local stack. Call :meth:`start` and :meth:`stop` from the main thread (see processes.py)."""

    def __init__(self, config: StackConfig) -> None:
        self.config = config
        names = [spec.name for spec in SERVICES] + [f"{db}-migrate" for db in DATABASES]
        self.supervisor = Supervisor(
            output=config.output,
            log_dir=config.log_dir if config.log_dir is not None else config.data_dir / "logs",
            name_width=max(len(n) for n in names),
        )
        self.postgres: EmbeddedPostgres | None = None
        if config.database_urls is None:
            self.postgres = EmbeddedPostgres(
                config.pg_data_dir if config.pg_data_dir is not None else config.data_dir / "postgres",
                config.pg_port,
                host=config.host,
                durable=config.durable_postgres,
                supervisor=self.supervisor,
            )
        self.broker: EmbeddedBroker | None = None
        if config.kafka_bootstrap is None:
            self.broker = EmbeddedBroker(config.kafka_port, host=config.host, supervisor=self.supervisor)
        self._services: dict[str, ChildProcess] = {}
        # Services whose migrations ran at start; the others had no migrate module and were skipped.
        self.migrated: list[str] = []
        self.healer: Healer | None = None
        self._supervision: threading.Thread | None = None
        self._stopping = threading.Event()

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

    # -- addresses -------------------------------------------------------------------------------

    def dsn(self, db: str) -> str:
        """SQLAlchemy asyncpg URL of one service database ('auth', 'bookmarks', 'enrichment')."""
        if self.config.database_urls is not None:
            return self.config.database_urls[db]
        assert self.postgres is not None
        return self.postgres.dsn(db)

    @property
    def database_urls(self) -> dict[str, str]:
        return {db: self.dsn(db) for db in DATABASES}

    @property
    def kafka_bootstrap(self) -> str:
        if self.config.kafka_bootstrap is not None:
            return self.config.kafka_bootstrap
        assert self.broker is not None
        return self.broker.bootstrap

    def service_url(self, name: str) -> str:
        host = self.config.service_host(name)
        if host in ("0.0.0.0", "::"):  # noqa: S104 - comparing, not binding
            host = "127.0.0.1"
        return f"http://{host}:{self.config.service_ports[name]}"

    def metrics_url(self, name: str) -> str:
        """Where Prometheus scrapes ``name``: its metrics listener, never the client-facing port."""
        return self.service_url(name).rsplit(":", 1)[0] + f":{self.config.metrics_ports[name]}/metrics"

    @property
    def gateway_url(self) -> str:
        return self.service_url("gateway")

    @property
    def urls(self) -> StackUrls:
        return StackUrls(
            gateway=self.gateway_url if self.config.services else None,
            services={spec.name: self.service_url(spec.name) for spec in SERVICES} if self.config.services else {},
            database_urls=self.database_urls,
            kafka_bootstrap=self.kafka_bootstrap,
        )

    @property
    def env(self) -> dict[str, str]:
        """The variables the stack sets for its children (without the inherited environment)."""
        env = {database_url_env(db): url for db, url in self.database_urls.items()}
        env[KAFKA_ENV] = self.kafka_bootstrap
        env[PARTITIONS_ENV] = str(self.config.topic_partitions)
        for spec in SERVICES:
            env[f"{spec.env_prefix}_HOST"] = self.config.service_host(spec.name)
            env[f"{spec.env_prefix}_PORT"] = str(self.config.service_ports[spec.name])
            env[spec.metrics_port_env] = str(self.config.metrics_ports[spec.name])
            if spec.name != "gateway":
                env[spec.url_env] = self.service_url(spec.name)
        if WEB_DIR_ENV not in os.environ and WEB_DIST.joinpath("index.html").is_file():
            env[WEB_DIR_ENV] = str(WEB_DIST)
        return env

    def child_env(self) -> dict[str, str]:
        """The complete environment of a child: inherited, then the stack's variables, then extras."""
        env = dict(os.environ) if self.config.inherit_env else {"PATH": os.environ.get("PATH", "")}
        # Without it a child's prints sit in a pipe buffer and the log tail of a crash comes up empty.
        env["PYTHONUNBUFFERED"] = "1"
        env.update(self.env)
        env.update(self.config.extra_env)
        return env

    @property
    def service_processes(self) -> dict[str, ChildProcess]:
        return dict(self._services)

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """PostgreSQL (+ databases) → broker (+ topics) → migrations → services, each waited for."""
        try:
            if self.postgres is not None:
                # Before the port check: an orphaned server of ours holds our port but is no stranger.
                self.postgres.stop_leftover()
            check_ports(self._port_plan())
            if self.postgres is not None:
                self.postgres.start()
                self.postgres.ensure_databases(DATABASES)
            if self.broker is not None:
                self.broker.start()
            self._ensure_topics()
            self.migrated = self.run_migrations()
            if self.config.services:
                self._start_services()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Services first (all at once), then the broker, then PostgreSQL. Safe to call repeatedly."""
        self._stopping.set()
        if self._supervision is not None and self._supervision is not threading.current_thread():
            self._supervision.join()
        timeout = self.config.stop_timeout
        if self._services:
            self.supervisor.stop(list(reversed(self._services.values())), timeout=timeout)
            self._services.clear()
        if self.broker is not None:
            self.broker.stop(timeout)
        if self.postgres is not None:
            self.postgres.stop(timeout)
        self.supervisor.stop(timeout=timeout)

    # -- healing ---------------------------------------------------------------------------------

    def heal(self) -> list[str]:
        """Restart every component found dead (with backoff); return the names restarted now."""
        if self.healer is None:
            self.healer = Healer(self._components())
        return self.healer.check()

    def supervise(self, interval: float = 0.5, *, healthy_seconds: float = HEALTHY_SECONDS) -> None:
        """Run :meth:`heal` on a thread until :meth:`stop` (children restarted there live as long).

        ``healthy_seconds``: how long a restarted child must stay up before its next death waits the first
        delay again (a drill that kills the same child every few seconds sets it low)."""

        def loop() -> None:
            while not self._stopping.wait(interval):
                self.heal()

        self.healer = Healer(self._components(), healthy_seconds=healthy_seconds)
        self._supervision = threading.Thread(target=loop, name="devstack-supervision", daemon=True)
        self._supervision.start()

    def _components(self) -> list[Component]:
        found: list[Component] = []
        if self.postgres is not None:
            postgres = self.postgres
            found.append(Component("postgres", lambda: postgres.running, self.restart_postgres))
        if self.broker is not None:
            broker = self.broker
            found.append(Component("kafka", lambda: broker.running, self.restart_broker))
        for name in self._services:
            found.append(Component(name, partial(self._service_alive, name), partial(self.restart_service, name)))
        return found

    def _service_alive(self, name: str) -> bool:
        return self._services[name].is_running()

    def restart_postgres(self) -> None:
        """Start the embedded PostgreSQL again on its data directory (its old process group is killed)."""
        assert self.postgres is not None
        self.postgres.stop(self.config.stop_timeout)
        self.postgres.start()

    def restart_broker(self) -> None:
        """A restarted broker is a new cluster (memory storage: no topic, record or committed offset
        survives), so it is started as at a first start: every service (each one uses the broker) is
        stopped, the broker started, the topics created, every service's retained outbox window marked
        for sending again (what the old broker had acknowledged is gone with it), then the services
        started in their phases. No consumer carries a position into the new log, nothing reaches the
        broker before its topics, and consumers are idempotent to what they had already applied.
        """
        assert self.broker is not None
        if self._services:
            self.supervisor.stop(list(reversed(self._services.values())), timeout=self.config.stop_timeout)
        self.broker.stop(self.config.stop_timeout)
        try:
            self.start_broker()
        except Exception:
            # A broker without its topics must not look healthy to the healer: stopped, it is retried.
            self.broker.stop(self.config.stop_timeout)
            raise
        if self._services:
            self._republish_outboxes()
            self._start_services()

    def restart_service(self, name: str) -> None:
        """Start a service process again (not waited for: it turns ready by itself). Refused while the
        embedded broker is down: its restart starts every service itself, after the topics."""
        if self.broker is not None and not self.broker.running:
            raise ServiceStartError(name, "waits for the broker's restart", "")
        old = self._services[name]
        self.supervisor.stop([old], timeout=self.config.stop_timeout)
        spec = _SPECS[name]
        self._services[name] = self.supervisor.spawn(name, [sys.executable, "-m", spec.module], env=self.child_env())

    def stop_broker(self) -> None:
        """Stop the embedded broker (its topics and messages are lost: memory storage)."""
        if self.broker is None:
            raise ConfigError("the broker is external; the stack cannot stop it")
        self.broker.stop(self.config.stop_timeout)

    def start_broker(self) -> None:
        """Start the embedded broker again on the same port and re-create the topics."""
        if self.broker is None:
            raise ConfigError("the broker is external; the stack cannot start it")
        self.broker.start()
        self._ensure_topics()

    def run_migrations(self, targets: Mapping[str, str] | None = None) -> list[str]:
        """Run ``python -m <service>.migrate`` for each service → DSN in ``targets`` (default: all).

        Migrations of different services run in parallel. Returns the services actually migrated: one
        whose migrate module does not exist is skipped when ``skip_missing_migrations`` is set.
        """
        plan = dict(targets) if targets is not None else self.database_urls
        children: list[ChildProcess] = []
        try:
            for service, url in plan.items():
                module = f"{service}.migrate"
                if not _module_exists(module):
                    if self.config.skip_missing_migrations:
                        continue
                    raise MigrationError(f"{service}-migrate", f"cannot run: module {module} not found")
                env = self.child_env()
                env[database_url_env(service)] = url
                children.append(self.supervisor.spawn(f"{service}-migrate", [sys.executable, "-m", module], env=env))
            for child in children:
                code = child.wait(self.config.migration_timeout)
                if code is None:
                    raise MigrationError(
                        child.name, f"did not finish within {self.config.migration_timeout:.0f} s", child.tail()
                    )
                if code != 0:
                    raise MigrationError(child.name, f"failed with exit code {code}", child.tail())
        finally:
            self.supervisor.stop(children, timeout=self.config.stop_timeout)
        return [child.name.removesuffix("-migrate") for child in children]

    def fresh_database(self, service: str) -> str:
        """Create a new, empty database migrated with ``service``'s migrations; return its URL.

        For tests that need a pristine database without restarting anything.
        """
        if self.postgres is None:
            raise ConfigError("fresh databases need the embedded PostgreSQL")
        name = f"{service}_{uuid.uuid4().hex[:10]}"
        self.postgres.ensure_databases([name])
        url = self.postgres.dsn(name)
        self.run_migrations({service: url})
        return url

    # -- internals -------------------------------------------------------------------------------

    def _port_plan(self) -> list[tuple[str, int, str, str | None]]:
        plan: list[tuple[str, int, str, str | None]] = []
        if self.postgres is not None:
            plan.append((self.config.host, self.config.pg_port, "postgres", PG_PORT_ENV))
        if self.broker is not None:
            plan.append((self.config.host, self.config.kafka_port, "kafka", KAFKA_PORT_ENV))
        if self.config.services:
            for spec in SERVICES:
                host = self.config.service_host(spec.name)
                plan.append((host, self.config.service_ports[spec.name], spec.name, f"{spec.env_prefix}_PORT"))
                plan.append((host, self.config.metrics_ports[spec.name], f"{spec.name} metrics", spec.metrics_port_env))
        return plan

    def _republish_outboxes(self) -> None:
        from common.outbox import republish_retained

        for db in DATABASES:
            run_blocking(partial(republish_retained, self.dsn(db)))

    def _ensure_topics(self) -> None:
        from common.events import TOPICS

        ensure_topics_blocking(self.kafka_bootstrap, TOPICS, self.config.topic_partitions)

    def _start_services(self) -> None:
        env = self.child_env()
        for phase in _START_PHASES:
            for name in phase:
                spec = _SPECS[name]
                self._services[name] = self.supervisor.spawn(name, [sys.executable, "-m", spec.module], env=env)
            self._wait_ready(phase)

    def _wait_ready(self, names: Sequence[str]) -> None:
        import httpx

        timeout = self.config.ready_timeout
        deadline = time.monotonic() + timeout
        pending = dict.fromkeys(names, "no answer yet")
        # trust_env=False: an HTTP(S)_PROXY from the shell must not intercept calls to 127.0.0.1.
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while True:
                for name in list(pending):
                    child = self._services[name]
                    code = child.returncode
                    if code is not None:
                        child.join_output(2.0)
                        raise ServiceStartError(name, f"exited with code {code} during start-up", child.tail())
                    url = f"{self.service_url(name)}/readyz"
                    try:
                        response = client.get(url)
                    except httpx.HTTPError as exc:
                        pending[name] = f"GET {url}: {type(exc).__name__}"
                        continue
                    if _is_ready_answer(response):
                        del pending[name]
                    else:
                        pending[name] = f"GET {url}: {response.status_code} {response.text[:200]}"
                if not pending:
                    return
                if time.monotonic() >= deadline:
                    name, last = next(iter(pending.items()))
                    others = [n for n in pending if n != name]
                    also = f"; also not ready: {', '.join(others)}" if others else ""
                    raise ServiceStartError(
                        name,
                        f"was not ready within {timeout:.0f} s (last {last}){also}",
                        self._services[name].tail(),
                    )
                time.sleep(0.2)


def _is_ready_answer(response: httpx.Response) -> bool:
    """Our services' ready answer, not merely a 200 from whatever else listens on the port."""
    if response.status_code != 200:
        return False
    try:
        return bool(response.json() == {"status": "ready"})
    except ValueError:
        return False


def check_ports(plan: Iterable[tuple[str, int, str, str | None]]) -> None:
    """Raise :class:`PortBusyError` for the first (host, port, component, env var) that cannot be bound."""
    seen: dict[int, str] = {}
    for host, port, component, env_var in plan:
        if port in seen:
            raise ConfigError(f"port {port} is configured for both {seen[port]} and {component}; set {env_var}")
        seen[port] = component
        if not port_is_free(host, port):
            raise PortBusyError(port, component, env_var)


def port_is_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # Servers set SO_REUSEADDR, so connections of a previous run lingering in TIME_WAIT don't
        # block them; without it here such a port would be reported busy although it is usable.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = DEFAULT_HOST) -> int:
    """A TCP port that is free right now (another process may still take it before we bind)."""
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = DEFAULT_HOST) -> list[int]:
    """``count`` distinct free ports: all probing sockets stay open until all are chosen."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.bind((host, 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _port(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if not raw:
        return default
    try:
        port = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a port number, got {raw!r}") from None
    if not 0 < port < 65536:
        raise ConfigError(f"{name} must be between 1 and 65535, got {port}")
    return port


def _positive(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
    if value < 1:
        raise ConfigError(f"{name} must be at least 1, got {value}")
    return value


def _repo_root() -> Path:
    """The uv workspace root above the current directory (where ``make run`` is invoked), else cwd."""
    cwd = Path.cwd()
    for candidate in (cwd, *cwd.parents):
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file() and "[tool.uv.workspace]" in pyproject.read_text(encoding="utf-8"):
            return candidate
    return cwd


def _module_exists(dotted: str) -> bool:
    """Whether ``python -m dotted`` would find a module, without importing the service's package."""
    package, _, name = dotted.rpartition(".")
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return False
    if spec is None or not spec.submodule_search_locations:
        return False
    return any(
        (Path(loc) / f"{name}.py").is_file() or (Path(loc) / name / "__main__.py").is_file()
        for loc in spec.submodule_search_locations
    )
