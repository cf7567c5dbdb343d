"""`python -m enrichment.worker`: run the enrichment job worker (health and metrics on its own port)."""

from __future__ import annotations

from common.logging import setup_logging
from common.server import serve
from enrichment.settings import Settings
from enrichment.worker.app import create_worker_app


def main() -> None:
    settings = Settings()
    setup_logging("enrichment-worker", settings.log_level)
    serve(
        create_worker_app(settings),
        service="enrichment-worker",
        settings=settings,
        host=settings.worker_host,
        port=settings.worker_port,
        metrics_port=settings.worker_metrics_port,
        # Slots hand back their attempts on shutdown; give them time to do it.
        timeout_graceful_shutdown=30,
    )


if __name__ == "__main__":
    main()
