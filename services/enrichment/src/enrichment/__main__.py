"""`python -m enrichment`: serve the enrichment API."""

from __future__ import annotations

import uvicorn

from common.logging import setup_logging
from enrichment.main import create_app
from enrichment.settings import Settings


def main() -> None:
    settings = Settings()
    setup_logging("enrichment", settings.log_level)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_config=None, access_log=False)


if __name__ == "__main__":
    main()
