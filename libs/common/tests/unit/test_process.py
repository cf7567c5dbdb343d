"""common.process.run_process: the one start of every process (each service's and the worker's __main__)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import common.process as process
from common.settings import CommonSettings


def test_a_process_logs_registers_its_secrets_builds_its_app_and_serves_it(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, Any]] = []
    monkeypatch.setattr(process, "setup_logging", lambda service, level: calls.append(("logging", (service, level))))
    monkeypatch.setattr(process, "register_secret", lambda value: calls.append(("secret", value)))
    monkeypatch.setattr(process, "serve", lambda app, **options: calls.append(("serve", (app, options))))
    settings = CommonSettings()
    app = object()

    def create_app(given: CommonSettings) -> object:
        calls.append(("app", given))
        return app

    logging.getLogger("test.chatty").setLevel(logging.INFO)
    process.run_process(
        "svc", settings, create_app, host="127.0.0.1", port=1, metrics_port=2,
        secrets=["s3cret", None], quiet_loggers=["test.chatty"], timeout_keep_alive=30,
    )  # fmt: skip

    assert [name for name, _ in calls] == ["logging", "secret", "secret", "app", "serve"]
    assert calls[0][1] == ("svc", settings.log_level)
    assert calls[3][1] is settings
    served, options = calls[4][1]
    assert served is app
    assert options == {"service": "svc", "settings": settings, "host": "127.0.0.1", "port": 1, "metrics_port": 2,
                       "timeout_keep_alive": 30}  # fmt: skip
    assert logging.getLogger("test.chatty").level == logging.WARNING
