"""The one way a process starts: every ``python -m <service>`` (the enrichment worker's and the gateway's
too) is :func:`run_process` with its name, settings and app factory.

In order: JSON logging on stderr at ``LOG_LEVEL`` (with the process's secrets registered, so no log line
carries them, and chatty libraries held at WARNING), the app built from the settings (``create_app``
builds nothing at import and opens nothing: its lifespan does, through ``common.runtime``), then
:func:`common.server.serve`: uvicorn with the edge protocols on host:port, Prometheus metrics on
host:metrics_port.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from common.logging import register_secret, setup_logging
from common.server import serve
from common.settings import CommonSettings

SettingsT = TypeVar("SettingsT", bound=CommonSettings)


def run_process(
    service: str,
    settings: SettingsT,
    create_app: Callable[[SettingsT], Any],
    *,
    host: str,
    port: int,
    metrics_port: int,
    secrets: Iterable[str | None] = (),
    quiet_loggers: Iterable[str] = (),
    **server_options: Any,
) -> None:
    """Serve ``create_app(settings)`` as the process ``service`` until it is stopped. ``server_options``
    go to uvicorn (WebSocket pings, keep-alive, graceful shutdown) over the options every process has."""
    setup_logging(service, settings.log_level)
    for secret in secrets:
        register_secret(secret)
    for name in quiet_loggers:
        logging.getLogger(name).setLevel(logging.WARNING)
    serve(
        create_app(settings),
        service=service,
        settings=settings,
        host=host,
        port=port,
        metrics_port=metrics_port,
        **server_options,
    )
