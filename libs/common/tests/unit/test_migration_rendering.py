"""What ``make migration`` writes for the models' column types: plain SQLAlchemy, never the models' own."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import render_python_code
from alembic.operations import ops
from sqlalchemy import ARRAY, Column, Text
from sqlalchemy.types import TypeDecorator
from sqlmodel.sql.sqltypes import AutoString

from common.migrations import Schema


class Tags(TypeDecorator[Any]):
    impl = ARRAY(Text())
    cache_ok = True


def rendered(column: Column[Any]) -> str:
    upgrade = ops.UpgradeOps([ops.AddColumnOp("t", column)])
    return render_python_code(upgrade, render_item=Schema.of([]).context_options()["render_item"])


def test_a_type_decorator_is_written_as_the_type_it_stores() -> None:
    code = rendered(Column("tags", Tags(), nullable=False))
    assert "ARRAY(sa.Text())" in code and "Tags" not in code and "test_migration_rendering" not in code


def test_sqlmodel_s_auto_string_is_written_as_sa_string() -> None:
    assert "sa.String()" in rendered(Column("name", AutoString()))
    assert "sa.String(length=5)" in rendered(Column("code", AutoString(length=5)))
