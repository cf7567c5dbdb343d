"""`python -m bookmarks.migrate`: upgrade the bookmarks database to the latest schema.

:func:`schema` is what the migrations must build: the tests compare a migrated database with it, and
``make migration`` writes a new revision from the difference.
"""

from __future__ import annotations

from pathlib import Path

from common.migrations import INFRA_FUNCTIONS, INFRA_TRIGGERS, Schema, upgrade_head

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def schema() -> Schema:
    from bookmarks.imports import tables as import_tables
    from bookmarks.store import tables

    own = (
        tables.bookmarks,
        tables.collections,
        tables.user_streams,
        tables.deleted_users,
        tables.pending_enrichments,
        tables.bulk_operations,
        tables.merges,
        tables.highlights,
        tables.page_texts,
    )
    return Schema.of(
        (*own, *import_tables.metadata.tables.values()),
        # The search index's SQL (revisions 0004 and 0021) and the stored wire document's trigger (0006 and later).
        functions=INFRA_FUNCTIONS
        | {
            "search_fold",
            "search_stems",
            "search_fields_vector",
            "search_head_vector",
            "search_page_vector",
            "search_full_vector",
            "bookmark_wire_document",
        },
        triggers=INFRA_TRIGGERS | {"bookmarks.bookmarks_wire_document"},
        unmodelled_indexes=frozenset({"ix_bookmarks_owner_normalized_url", "ix_bookmarks_live_domain"}),
    )


def main() -> None:
    from bookmarks.settings import Settings

    upgrade_head(migrations_dir=MIGRATIONS_DIR, url=Settings().database_url)


if __name__ == "__main__":
    main()
