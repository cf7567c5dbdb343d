"""`python -m auth`: serve the auth API."""

from __future__ import annotations

from auth.main import create_app
from auth.settings import Settings
from common.process import run_process


def main() -> None:
    settings = Settings()
    run_process(
        "auth",
        settings,
        create_app,
        host=settings.host,
        port=settings.port,
        metrics_port=settings.metrics_port,
        secrets=[settings.admin_token.get_secret_value() if settings.admin_token else None],
    )


if __name__ == "__main__":
    main()
