"""`python -m enrichment.worker`: run the enrichment job worker (health and metrics on its own port)."""

from __future__ import annotations

from common.process import run_process
from enrichment.settings import Settings
from enrichment.worker.app import create_worker_app


def main() -> None:
    settings = Settings()
    run_process(
        "enrichment-worker",
        settings,
        create_worker_app,
        host=settings.worker_host,
        port=settings.worker_port,
        metrics_port=settings.worker_metrics_port,
        # Slots hand back their attempts on shutdown; give them time to do it.
        timeout_graceful_shutdown=30,
    )


if __name__ == "__main__":
    main()
