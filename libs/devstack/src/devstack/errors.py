"""Errors raised while bringing the local stack up.

Exception tree::

    DevstackError
     ├── ConfigError          the environment describes an impossible stack (bad port, half-external)
     ├── PortBusyError        a port the stack must listen on is taken (nothing was started)
     ├── DataDirInUseError    a live PostgreSQL from another launcher owns the data directory
     └── StartupError         a component failed to come up (everything started so far was stopped)
          ├── MigrationError      ``python -m <svc>.migrate`` exited non-zero
          └── ServiceStartError   a service exited or did not answer ``/readyz`` in time

Every message is meant to be printed as-is to a developer: one line that says what to do, then (for
start-up failures) the last log lines of the culprit.
"""

from __future__ import annotations

from collections.abc import Sequence


class DevstackError(Exception):
    """Base class of every error the local stack raises on purpose."""


class ConfigError(DevstackError):
    """The configuration (usually the environment) is invalid."""


class PortBusyError(DevstackError):
    """A port the stack needs is already bound by some other process."""

    def __init__(self, port: int, component: str, env_var: str | None) -> None:
        self.port = port
        self.component = component
        self.env_var = env_var
        hint = f"; set {env_var} to another port" if env_var else ""
        super().__init__(f"port {port} ({component}) is already in use{hint}")


class DataDirInUseError(DevstackError):
    """Another launcher's PostgreSQL is serving the data directory we were asked to use."""


class StartupError(DevstackError):
    """A component of the stack failed to start; ``log_tail`` holds its last output lines."""

    def __init__(self, component: str, reason: str, log_tail: Sequence[str] = ()) -> None:
        self.component = component
        self.reason = reason
        self.log_tail = list(log_tail)
        message = f"{component} {reason}"
        if self.log_tail:
            shown = "\n".join(f"    {line}" for line in self.log_tail)
            message = f"{message}\n  last log lines of {component}:\n{shown}"
        super().__init__(message)


class MigrationError(StartupError):
    """A service's migration command failed."""


class ServiceStartError(StartupError):
    """A service process exited during start-up or never reported ready."""
