"""`python -m enrichment.migrate`: upgrade the enrichment database to the latest schema.

:func:`schema` is what the migrations must build: the tests compare a migrated database with it, and
``make migration`` writes a new revision from the difference.
"""

from __future__ import annotations

from pathlib import Path

from common.migrations import INFRA_FUNCTIONS, INFRA_TRIGGERS, Schema, upgrade_head

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def schema() -> Schema:
    from enrichment.store.tables import EnrichmentTable

    return Schema.of(
        EnrichmentTable.metadata.tables.values(),
        # Workers LISTEN for new jobs.
        functions=INFRA_FUNCTIONS | {"enrichment_jobs_notify"},
        triggers=INFRA_TRIGGERS | {"jobs.enrichment_jobs_notify"},
    )


def main() -> None:
    from enrichment.settings import Settings

    upgrade_head(migrations_dir=MIGRATIONS_DIR, url=Settings().database_url)


if __name__ == "__main__":
    main()
