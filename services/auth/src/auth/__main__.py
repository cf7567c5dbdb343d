"""`python -m auth`: serve the auth API."""

from __future__ import annotations

import uvicorn

from auth.main import create_app
from auth.settings import Settings
from common.logging import setup_logging


def main() -> None:
    settings = Settings()
    setup_logging("auth", settings.log_level)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_config=None, access_log=False)


if __name__ == "__main__":
    main()
