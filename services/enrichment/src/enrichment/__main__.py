"""`python -m enrichment`: serve the enrichment API."""

from __future__ import annotations

from common.process import run_process
from enrichment.main import create_app
from enrichment.settings import Settings


def main() -> None:
    settings = Settings()
    run_process(
        "enrichment", settings, create_app, host=settings.host, port=settings.port, metrics_port=settings.metrics_port
    )


if __name__ == "__main__":
    main()
