"""Alembic glue shared by the services: one ``env.py`` body, a ``python -m <svc>.migrate`` runner, and the
comparison of a migrated database with the models (tests and ``make migration`` use the same settings).

Revisions never import this module or the models: each states its own DDL, so it builds the same schema
in every later checkout. The models describe the schema the chain must arrive at; :class:`Schema` adds
what they cannot say (functions, triggers, indexes declared only in a revision).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.autogenerate import render as alembic_render
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Index, MetaData, Table, pool, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import async_engine_from_config
from sqlalchemy.schema import CreateIndex
from sqlalchemy.types import TypeDecorator
from sqlmodel.sql.sqltypes import AutoString

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
# What every service's first revision installs next to the infra tables.
INFRA_FUNCTIONS = frozenset({"outbox_notify"})
INFRA_TRIGGERS = frozenset({"outbox.outbox_notify"})


def create_infra_tables(connection: Connection) -> None:
    """Create outbox, processed_events and dead_letters (with the NOTIFY trigger) in a database that has
    no migrations of its own (the shared library's tests); service databases get them from revision 0001."""
    for table in INFRA_TABLES:
        table.create(bind=connection, checkfirst=True)
    for statement in _split_sql(OUTBOX_NOTIFY_SQL):
        connection.exec_driver_sql(statement)


def _split_sql(sql: str) -> list[str]:
    # The function body contains semicolons; split only on statement boundaries we wrote.
    parts = sql.strip().split("$$ LANGUAGE plpgsql;")
    head = parts[0] + "$$ LANGUAGE plpgsql"
    return [head.strip(), *[s.strip() for s in parts[1].split(";") if s.strip()]]


@dataclass(frozen=True)
class Schema:
    """The schema a service's migrations build: its tables (``metadata``, infra tables included) plus the
    objects the models do not describe, named so that a comparison checks them in the catalog instead.

    ``functions``: names of the functions in schema public; ``triggers``: ``table.trigger``;
    ``unmodelled_indexes``: indexes a revision creates that no model declares (left out of the comparison,
    checked by name).
    """

    metadata: MetaData
    functions: frozenset[str] = INFRA_FUNCTIONS
    triggers: frozenset[str] = INFRA_TRIGGERS
    unmodelled_indexes: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, tables: Iterable[Table], **extras: Any) -> Schema:
        """The service's ``tables`` and the infra tables, copied into a metadata of their own."""
        metadata = MetaData()
        for table in (*INFRA_TABLES, *tables):
            table.to_metadata(metadata)
        return cls(metadata=metadata, **extras)

    def include_object(self, obj: object, name: str | None, type_: str, reflected: bool, compare_to: object) -> bool:
        """Alembic's filter: the version table and the unmodelled indexes are not the models' business."""
        if type_ == "table" and name == "alembic_version":
            return False
        return not (type_ == "index" and reflected and compare_to is None and name in self.unmodelled_indexes)

    def context_options(self) -> dict[str, Any]:
        """How autogenerate compares: column types and server defaults too, through :meth:`include_object`."""
        return {
            "target_metadata": self.metadata,
            "compare_type": True,
            "compare_server_default": True,
            "include_object": self.include_object,
            "render_item": _render_item,
        }

    def differences(self, connection: Connection) -> list[Any]:
        """What autogenerate would write to bring the connected database to the models (empty: in step)."""
        context = MigrationContext.configure(connection, opts=self.context_options())
        return list(compare_metadata(context, self.metadata))

    def index_mismatches(self, connection: Connection) -> dict[str, tuple[str, str]]:
        """Indexes whose definition in the database differs from the model's: name → (database, model).

        Autogenerate compares an index's columns and expressions but not a partial index's WHERE clause,
        so each model index is built under a scratch name in a savepoint, and PostgreSQL's own rendering
        of both (``pg_get_indexdef``) is compared. Nothing of it stays.
        """
        mismatches: dict[str, tuple[str, str]] = {}
        for table in self.metadata.tables.values():
            for index in table.indexes:
                if index.name is None:
                    continue
                actual, wanted = _index_definitions(connection, index)
                if actual != wanted:
                    mismatches[index.name] = (actual, wanted)
        return mismatches

    def missing_catalog_objects(self, connection: Connection) -> dict[str, set[str]]:
        """The functions, triggers and unmodelled indexes the database lacks, and any it has unlisted."""
        found = {
            "functions": _names(connection, _FUNCTIONS_SQL),
            "triggers": _names(connection, _TRIGGERS_SQL),
            "unmodelled_indexes": _names(connection, _INDEXES_SQL) & self.unmodelled_indexes,
        }
        wanted = {"functions": self.functions, "triggers": self.triggers, "unmodelled_indexes": self.unmodelled_indexes}
        problems = {f"missing {kind}": set(wanted[kind]) - found[kind] for kind in wanted}
        problems |= {f"unlisted {kind}": found[kind] - set(wanted[kind]) for kind in ("functions", "triggers")}
        return {kind: names for kind, names in problems.items() if names}


def _render_item(type_: str, obj: Any, autogen_context: Any) -> str | Literal[False]:
    # A revision names plain SQLAlchemy types, so it never imports more than SQLAlchemy and Alembic: a model
    # field without its own column type gets SQLModel's AutoString, written as sa.String; a column type of
    # the models' own (a TypeDecorator, e.g. bookmarks' Strings) is written as the type it stores, by
    # Alembic's own renderer.
    if type_ == "type" and isinstance(obj, AutoString):
        return "sa.String()" if obj.length is None else f"sa.String(length={obj.length})"
    if type_ == "type" and isinstance(obj, TypeDecorator):
        return alembic_render._repr_type(obj.impl_instance, autogen_context)
    return False


_FUNCTIONS_SQL = (
    "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'"
)
_TRIGGERS_SQL = (
    "SELECT c.relname || '.' || t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND NOT t.tgisinternal"
)
_INDEXES_SQL = "SELECT indexname FROM pg_indexes WHERE schemaname = 'public'"


_SCRATCH_INDEX = "schema_check_scratch_index"
_INDEXDEF_SQL = "SELECT pg_get_indexdef(to_regclass(:name))"


def _index_definitions(connection: Connection, index: Index) -> tuple[str, str]:
    """(the database's definition of ``index``, the model's), both rendered by PostgreSQL, names equal."""
    actual = connection.execute(text(_INDEXDEF_SQL), {"name": index.name}).scalar_one_or_none() or ""
    ddl = str(CreateIndex(index).compile(dialect=connection.dialect))
    savepoint = connection.begin_nested()
    try:
        connection.exec_driver_sql(ddl.replace(f"INDEX {index.name} ON", f"INDEX {_SCRATCH_INDEX} ON", 1))
        wanted = connection.execute(text(_INDEXDEF_SQL), {"name": _SCRATCH_INDEX}).scalar_one()
    finally:
        savepoint.rollback()
    return str(actual), str(wanted).replace(_SCRATCH_INDEX, str(index.name), 1)


def _names(connection: Connection, sql: str) -> set[str]:
    return {str(row[0]) for row in connection.execute(text(sql))}


def run_env(*, url: str, schema: Schema | None = None) -> None:
    """Body of every service's ``migrations/env.py`` (online, async engine)."""
    from alembic import context

    options = schema.context_options() if schema is not None else {}

    def do_run(connection: Connection) -> None:
        context.configure(connection=connection, **options)
        with context.begin_transaction():
            context.run_migrations()

    async def run_async() -> None:
        engine = async_engine_from_config({"sqlalchemy.url": url}, prefix="sqlalchemy.", poolclass=pool.NullPool)
        async with engine.connect() as connection:
            await connection.run_sync(do_run)
        await engine.dispose()

    asyncio.run(run_async())


def alembic_config(*, migrations_dir: Path, url: str = "", schema: Schema | None = None) -> Config:
    """Alembic's configuration for a service's chain; ``schema`` replaces the service's own in ``env.py``."""
    config = Config()
    if schema is not None:
        config.attributes["schema"] = schema
    config.set_main_option("script_location", str(migrations_dir))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(*, migrations_dir: Path, url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(migrations_dir=migrations_dir, url=url), revision)


def upgrade_head(*, migrations_dir: Path, url: str) -> None:
    upgrade(migrations_dir=migrations_dir, url=url)


def next_revision_id(migrations_dir: Path) -> str | None:
    """The id after the head's when ids are numbered (0006 → 0007); None lets Alembic choose one."""
    head, _ = head_and_previous(migrations_dir)
    return f"{int(head) + 1:0{len(head)}d}" if head.isdigit() else None


def head_and_previous(migrations_dir: Path) -> tuple[str, str | None]:
    """The head revision and the one it revises (None when the chain has a single revision)."""
    scripts = ScriptDirectory.from_config(alembic_config(migrations_dir=migrations_dir))
    head = scripts.get_current_head()
    if head is None:
        raise ValueError(f"{migrations_dir} has no revisions")
    previous = scripts.get_revision(head).down_revision
    if previous is not None and not isinstance(previous, str):
        raise ValueError(f"{migrations_dir}: head {head} merges branches; give the previous release by name")
    return head, previous
