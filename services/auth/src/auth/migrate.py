"""`python -m auth.migrate`: upgrade the auth database to the latest schema.

:func:`schema` is what the migrations must build: the tests compare a migrated database with it, and
``make migration`` writes a new revision from the difference.
"""

from __future__ import annotations

from pathlib import Path

from common.migrations import Schema, upgrade_head

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def schema() -> Schema:
    from auth.store.tables import AuthTable

    return Schema.of(AuthTable.metadata.tables.values())


def main() -> None:
    from auth.settings import Settings

    upgrade_head(migrations_dir=MIGRATIONS_DIR, url=Settings().database_url)


if __name__ == "__main__":
    main()
