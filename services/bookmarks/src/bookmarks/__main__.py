"""`python -m bookmarks`: serve the bookmarks API."""

from __future__ import annotations

from bookmarks.main import create_app
from bookmarks.settings import Settings
from common.process import run_process


def main() -> None:
    settings = Settings()
    run_process(
        "bookmarks", settings, create_app, host=settings.host, port=settings.port, metrics_port=settings.metrics_port
    )


if __name__ == "__main__":
    main()
