"""Embedded PostgreSQL 16 from the ``pgserver`` wheel, run as a supervised child listening on TCP.

pgserver's own ``get_server`` is not used: it listens only on a Unix socket and daemonizes the server,
while the stack wants a TCP port (services use ordinary DSNs) and a child process it can stop and whose
logs it can show. Only its binaries and its root-handling helpers are reused.

PostgreSQL refuses to run as root. When the launcher is root (containers, CI), ``initdb`` and
``postgres`` run as the ``pgserver`` system user, created on demand, which owns the data directory.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Self

import psutil

from devstack.errors import DataDirInUseError, StartupError
from devstack.processes import ChildProcess, Supervisor

__all__ = ["EmbeddedPostgres", "scratch_data_dir"]

SUPERUSER = "postgres"
# Same name pgserver uses, so a data directory created by either tool ends up owned consistently.
SYSTEM_USER = "pgserver"
_DB_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_prepared_binaries = False


def _bin_dir() -> Path:
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise StartupError("postgres", "cannot run: the pgserver package is not installed")
    # Located without importing pgserver: its __init__ has import-time side effects (platformdirs
    # warnings about XDG_RUNTIME_DIR) that have nothing to do with the binaries.
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _pgserver_utils() -> ModuleType:
    with warnings.catch_warnings():
        # pgserver/__init__ computes a runtime dir at import and warns when XDG_RUNTIME_DIR is unset.
        warnings.simplefilter("ignore")
        import pgserver.utils

    return pgserver.utils


def _client_env() -> dict[str, str]:
    # PG* variables of the developer's shell (PGHOST, PGDATABASE, PGSSLMODE...) would silently retarget
    # our own psql/pg_isready/initdb calls.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["TZ"] = "UTC"
    return env


def _url_host(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "::", "") else host  # noqa: S104 - comparing, not binding


class EmbeddedPostgres:
    """A PostgreSQL server whose data lives in ``data_dir`` and which listens on ``host:port``.

    ``durable=False`` turns off fsync and friends: much faster for tests, and still safe against the
    processes crashing, only not against the machine crashing.
    """

    def __init__(
        self,
        data_dir: Path,
        port: int,
        *,
        host: str = "127.0.0.1",
        durable: bool = True,
        supervisor: Supervisor | None = None,
        startup_timeout: float = 60.0,
        max_connections: int = 200,
    ) -> None:
        self.data_dir = Path(data_dir).absolute()
        self.port = port
        self.host = host
        self.durable = durable
        self.startup_timeout = startup_timeout
        self.max_connections = max_connections
        self._supervisor = supervisor if supervisor is not None else Supervisor()
        self._child: ChildProcess | None = None
        self._system_user = SYSTEM_USER if os.geteuid() == 0 else None

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
    def running(self) -> bool:
        return self._child is not None and self._child.is_running()

    @property
    def process(self) -> ChildProcess | None:
        return self._child

    def dsn(self, db: str) -> str:
        """SQLAlchemy URL for the services (``postgresql+asyncpg://...``)."""
        return f"postgresql+asyncpg://{SUPERUSER}@{_url_host(self.host)}:{self.port}/{db}"

    def libpq_dsn(self, db: str) -> str:
        """Plain ``postgresql://`` URL, for ``asyncpg.connect`` and ``psql``."""
        return f"postgresql://{SUPERUSER}@{_url_host(self.host)}:{self.port}/{db}"

    def start(self) -> None:
        """Initialize the data directory if needed, start the server and wait until it accepts queries."""
        if self.running:
            return
        self._prepare_data_dir()
        self.stop_leftover()
        self._initdb_if_needed()
        argv = [
            str(_bin_dir() / "postgres"),
            "-D",
            str(self.data_dir),
            "-h",
            self.host,
            "-p",
            str(self.port),
            # No Unix socket: clients use TCP, and socket paths under deep temp dirs exceed the
            # 107-byte sun_path limit.
            "-k",
            "",
            "-c",
            f"max_connections={self.max_connections}",
            "-c",
            "timezone=UTC",
            "-c",
            "log_checkpoints=off",
        ]
        if not self.durable:
            for setting in ("fsync=off", "synchronous_commit=off", "full_page_writes=off"):
                argv += ["-c", setting]
        self._child = self._supervisor.spawn(
            "postgres",
            argv,
            env=_client_env(),
            cwd=self.data_dir,
            # SIGINT is PostgreSQL's "fast shutdown"; SIGTERM would wait for every client to disconnect.
            stop_signal=signal.SIGINT,
            death_signal=signal.SIGINT,
            user=self._system_user,
        )
        self._wait_ready()

    def stop(self, timeout: float = 10.0) -> None:
        """Fast shutdown (SIGINT), SIGKILL after ``timeout``."""
        if self._child is not None:
            self._supervisor.stop([self._child], timeout=timeout)
            self._child = None

    def ensure_databases(self, names: Iterable[str]) -> None:
        """Create each database that does not exist yet."""
        wanted = list(names)
        for name in wanted:
            if not _DB_NAME.match(name):
                raise ValueError(f"unsupported database name {name!r}")
        existing = set(self.psql("postgres", "SELECT datname FROM pg_database").split())
        for name in wanted:
            if name not in existing:
                self.psql("postgres", f'CREATE DATABASE "{name}"')

    def psql(self, db: str, sql: str) -> str:
        """Run ``sql`` with psql (unaligned, tuples only) and return its output."""
        result = subprocess.run(  # noqa: S603 - fixed binary, our own SQL
            [
                str(_bin_dir() / "psql"),
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                self.libpq_dsn(db),
                "-c",
                sql,
            ],
            env=_client_env(),
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise StartupError("postgres", f"rejected {sql!r}: {result.stderr.strip()}")
        return result.stdout

    def stop_leftover(self) -> None:
        """Stop a PostgreSQL left running on our data directory by a launcher that was killed.

        Its parent-death signal normally takes it down with the launcher; this covers the rest (e.g. a
        launcher killed while its children were being started). A server whose launcher is still alive
        is not ours to stop: raise :class:`DataDirInUseError`.
        """
        pid_file = self.data_dir / "postmaster.pid"
        try:
            pid = int(pid_file.read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return
        try:
            proc = psutil.Process(pid)
            ours = (
                proc.status() != psutil.STATUS_ZOMBIE
                and proc.name() == "postgres"
                and str(self.data_dir) in proc.cmdline()
            )
        except psutil.NoSuchProcess:
            ours = False
        except psutil.AccessDenied:
            # Cannot tell; let PostgreSQL apply its own check rather than risk removing a live lock.
            return
        if not ours:
            # The server is gone but the pid is dead, a zombie (our killed launcher's child, never reaped
            # by an init that doesn't reap) or recycled by an unrelated process. PostgreSQL treats any
            # live pid as a running postmaster and would refuse to start, so the stale file has to go.
            with contextlib.suppress(FileNotFoundError):
                pid_file.unlink()
            return
        parent = proc.parent()
        if parent is not None and parent.pid != 1 and _is_launcher(parent):
            raise DataDirInUseError(
                f"{self.data_dir} is used by a running PostgreSQL (pid {pid}) started by pid {parent.pid} "
                f"({' '.join(parent.cmdline()[:4])}); stop that first or set DEVSTACK_DATA_DIR"
            )
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except psutil.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def _prepare_data_dir(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self._system_user is None:
            return
        utils = _pgserver_utils()
        entry = utils.ensure_user_exists(self._system_user)
        utils.ensure_prefix_permissions(self.data_dir)
        _prepare_binaries()
        os.chown(self.data_dir, entry.pw_uid, entry.pw_gid)
        # initdb requires 0700 or 0750 and PostgreSQL refuses anything wider.
        self.data_dir.chmod(0o700)

    def _initdb_if_needed(self) -> None:
        if (self.data_dir / "PG_VERSION").exists():
            return
        if any(self.data_dir.iterdir()):
            raise StartupError(
                "postgres",
                f"cannot initialize {self.data_dir}: it is not empty and holds no database cluster; "
                "delete it or set DEVSTACK_DATA_DIR",
            )
        argv = [
            str(_bin_dir() / "initdb"),
            "-D",
            str(self.data_dir),
            "--auth=trust",
            "-U",
            SUPERUSER,
            "--encoding=UTF8",
            # The C locale exists everywhere; a LANG from the shell that is not installed would fail.
            "--no-locale",
            "--no-instructions",
        ]
        if not self.durable:
            argv.append("--no-sync")
        group = None
        if self._system_user is not None:
            import pwd

            group = pwd.getpwnam(self._system_user).pw_gid
        result = subprocess.run(  # noqa: S603 - fixed binary and arguments
            argv,
            env=_client_env(),
            cwd=self.data_dir,
            capture_output=True,
            text=True,
            check=False,
            user=self._system_user,
            group=group,
            extra_groups=[] if self._system_user is not None else None,
        )
        if result.returncode != 0:
            lines = (result.stdout + result.stderr).splitlines()
            raise StartupError("postgres", f"initdb failed (exit {result.returncode})", lines[-30:])

    def _wait_ready(self) -> None:
        assert self._child is not None
        deadline = time.monotonic() + self.startup_timeout
        probe = [
            str(_bin_dir() / "pg_isready"),
            "-q",
            "-t",
            "1",
            "-d",
            self.libpq_dsn("postgres"),
        ]
        while True:
            code = self._child.returncode
            if code is not None:
                self._child.join_output(2.0)
                tail = self._child.tail()
                self.stop()
                raise StartupError("postgres", f"exited with code {code} during start-up", tail)
            ready = subprocess.run(probe, env=_client_env(), capture_output=True, check=False)  # noqa: S603
            if ready.returncode == 0:
                return
            if time.monotonic() >= deadline:
                tail = self._child.tail()
                self.stop()
                raise StartupError("postgres", f"did not accept connections within {self.startup_timeout:.0f} s", tail)
            time.sleep(0.1)


@contextlib.contextmanager
def scratch_data_dir(prefix: str = "devstack-pg-", *, fallback: Path) -> Iterator[Path]:
    """A throw-away data directory that the PostgreSQL system user can reach for as long as needed.

    As a regular user this is just ``fallback`` (e.g. a pytest ``tmp_path``). As root the server runs as
    another user, who must traverse every parent directory, but pytest puts its temp dirs below
    ``/tmp/pytest-of-root`` and resets that to mode 0700 whenever any pytest session starts, locking
    the server out mid-run. So as root a fresh directory directly under the system temp dir is used and
    removed afterwards.
    """
    if os.geteuid() != 0:
        yield fallback
        return
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield root / "pgdata"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _prepare_binaries() -> None:
    """Let the unprivileged user read and execute the wheel's binaries and libraries (once per process)."""
    global _prepared_binaries
    if _prepared_binaries:
        return
    utils = _pgserver_utils()
    bin_dir = _bin_dir()
    read = stat.S_IRGRP | stat.S_IROTH
    execute = stat.S_IXGRP | stat.S_IXOTH
    utils.ensure_prefix_permissions(bin_dir)
    utils.ensure_folder_permissions(bin_dir, read | execute)
    utils.ensure_folder_permissions(bin_dir.parent / "lib", read)
    utils.ensure_folder_permissions(bin_dir.parent / "share", read)
    _prepared_binaries = True


def _is_launcher(proc: psutil.Process) -> bool:
    """Whether ``proc`` looks like a live devstack launcher (``make run`` or a pytest session)."""
    try:
        cmdline = " ".join(proc.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
    return "devstack" in cmdline or "pytest" in cmdline
