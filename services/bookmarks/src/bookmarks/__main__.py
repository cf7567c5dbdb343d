"""`python -m bookmarks`: serve the bookmarks API."""

from __future__ import annotations

from bookmarks.main import create_app
from bookmarks.settings import Settings
from common.logging import setup_logging
from common.server import serve


def main() -> None:
    settings = Settings()
    setup_logging("bookmarks", settings.log_level)
    serve(
        create_app(settings),
        service="bookmarks",
        settings=settings,
        host=settings.host,
        port=settings.port,
        metrics_port=settings.metrics_port,
    )


if __name__ == "__main__":
    main()
