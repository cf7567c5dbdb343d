"""`python -m enrichment.migrate`: upgrade the enrichment database to the latest schema."""

from __future__ import annotations

from pathlib import Path

from common.migrations import upgrade_head
from enrichment.settings import Settings

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def main() -> None:
    upgrade_head(migrations_dir=MIGRATIONS_DIR, url=Settings().database_url)


if __name__ == "__main__":
    main()
