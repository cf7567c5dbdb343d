"""Migrations upgrade databases as earlier releases left them: 0004 (page capture)."""

from __future__ import annotations

import asyncio
from typing import Any

from enrichment_support import Db

# What 0004 adds, taken away again to go back to the schema 0003 released.
_BEFORE_0004 = (
    "DROP TABLE private_snapshots",
    "DROP TABLE captured_pages",
    "DROP INDEX ux_jobs_in_flight_url",
    "CREATE UNIQUE INDEX ux_jobs_in_flight_url ON jobs (normalized_url) "
    "WHERE status IN ('pending', 'processing', 'retrying')",
    "ALTER TABLE jobs DROP COLUMN private_for",
    "UPDATE alembic_version SET version_num = '0003'",
)


async def test_0004_adds_private_jobs_captured_pages_and_private_snapshots(infra: Any) -> None:
    db = Db(infra.fresh_database("enrichment"))
    try:
        for statement in _BEFORE_0004:
            await db.execute(statement)
        await db.execute(
            "INSERT INTO jobs (id, normalized_url, url, status) "
            "VALUES (gen_random_uuid(), 'https://old.example/', 'https://old.example/', 'pending')"
        )

        # In a child process, as deployments run it (revision 0001 defines tables on SQLModel's shared
        # metadata, which must not meet another service's tables of the same name in this process).
        await asyncio.to_thread(infra.run_migrations, {"enrichment": db.url})

        index = await db.scalar("SELECT indexdef FROM pg_indexes WHERE indexname = 'ux_jobs_in_flight_url'")
        assert index.endswith("WHERE ((status = ANY (ARRAY['pending'::text, 'processing'::text, 'retrying'::text])) "
                              "AND (private_for IS NULL))"), index  # fmt: skip
        assert await db.scalar("SELECT private_for FROM jobs") is None  # the old job stays a shared one
        tables = {r["tablename"] for r in await db.rows("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        assert {"captured_pages", "private_snapshots"} <= tables
        assert await db.scalar("SELECT version_num FROM alembic_version") == "0004"
    finally:
        await db.close()
