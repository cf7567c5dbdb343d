"""`python -m auth`: serve the auth API."""

from __future__ import annotations

from auth.main import create_app
from auth.settings import Settings
from common.logging import register_secret, setup_logging
from common.server import serve


def main() -> None:
    settings = Settings()
    setup_logging("auth", settings.log_level)
    register_secret(settings.admin_token.get_secret_value() if settings.admin_token else None)
    serve(
        create_app(settings),
        service="auth",
        settings=settings,
        host=settings.host,
        port=settings.port,
        metrics_port=settings.metrics_port,
    )


if __name__ == "__main__":
    main()
