"""Alembic glue shared by the services: one ``env.py`` body and a ``python -m <svc>.migrate`` runner."""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import MetaData, pool
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import async_engine_from_config

from common.tables import INFRA_TABLES

OUTBOX_NOTIFY_SQL = """
CREATE OR REPLACE FUNCTION outbox_notify() RETURNS trigger AS $$
BEGIN
  PERFORM pg_notify('outbox', '');
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS outbox_notify ON outbox;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();
"""


def create_infra_tables(connection: Connection) -> None:
    """Create outbox, processed_events and dead_letters (with the NOTIFY trigger) in a migration."""
    for table in INFRA_TABLES:
        table.create(bind=connection, checkfirst=True)
    for statement in _split_sql(OUTBOX_NOTIFY_SQL):
        connection.exec_driver_sql(statement)


def _split_sql(sql: str) -> list[str]:
    # The function body contains semicolons; split only on statement boundaries we wrote.
    parts = sql.strip().split("$$ LANGUAGE plpgsql;")
    head = parts[0] + "$$ LANGUAGE plpgsql"
    return [head.strip(), *[s.strip() for s in parts[1].split(";") if s.strip()]]


def run_env(*, url: str, target_metadata: MetaData | None = None) -> None:
    """Body of every service's ``migrations/env.py`` (online, async engine)."""
    from alembic import context

    def do_run(connection: Connection) -> None:
        context.configure(connection=connection, target_metadata=target_metadata)
        with context.begin_transaction():
            context.run_migrations()

    async def run_async() -> None:
        engine = async_engine_from_config({"sqlalchemy.url": url}, prefix="sqlalchemy.", poolclass=pool.NullPool)
        async with engine.connect() as connection:
            await connection.run_sync(do_run)
        await engine.dispose()

    asyncio.run(run_async())


def upgrade_head(*, migrations_dir: Path, url: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    command.upgrade(config, "head")
