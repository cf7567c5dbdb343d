"""`python -m bookmarks`: serve the bookmarks API."""

from __future__ import annotations

import uvicorn

from bookmarks.main import create_app
from bookmarks.settings import Settings
from common.logging import setup_logging


def main() -> None:
    settings = Settings()
    setup_logging("bookmarks", settings.log_level)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_config=None, access_log=False)


if __name__ == "__main__":
    main()
