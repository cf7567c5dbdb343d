"""`python -m enrichment`: serve the enrichment API."""

from __future__ import annotations

from common.logging import setup_logging
from common.server import serve
from enrichment.main import create_app
from enrichment.settings import Settings


def main() -> None:
    settings = Settings()
    setup_logging("enrichment", settings.log_level)
    serve(
        create_app(settings),
        service="enrichment",
        settings=settings,
        host=settings.host,
        port=settings.port,
        metrics_port=settings.metrics_port,
    )


if __name__ == "__main__":
    main()
