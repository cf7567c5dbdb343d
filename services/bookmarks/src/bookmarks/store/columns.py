"""A record's declared fields as table columns (bookmarks.domain.fields): one column per field, named as
the field, its SQL type from the field's type, NULL allowed when the type allows None, and the field's
default as the column's server default (so a revision adding a field to a table with rows needs no
backfill)."""

from __future__ import annotations

import enum
from typing import Any

from sqlalchemy import ARRAY, BigInteger, Boolean, Column, Date, DateTime, Numeric, Text, text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

from bookmarks.domain.fields import Declared, Kind

__all__ = ["Strings", "column", "sql_type"]


class Strings(TypeDecorator[tuple[str, ...]]):
    """``text[]`` read as the record's ``tuple[str, ...]``. The driver already returns a list; SQLAlchemy's own
    ARRAY would copy it twice more in Python, once per array per row (an export reads 300,000 of them)."""

    impl = ARRAY(Text())
    cache_ok = True

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        del dialect, coltype
        return _as_tuple


def _as_tuple(value: list[str] | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


def sql_type(kind: Kind) -> TypeEngine[Any]:
    """The column type of a kind: an enum is its value as text (values change without DDL)."""
    types: dict[Kind, TypeEngine[Any]] = {
        "text": Text(),
        "enum": Text(),
        "int": BigInteger(),
        "bool": Boolean(),
        "timestamp": DateTime(timezone=True),
        "date": Date(),
        "decimal": Numeric(),
        "uuid": UUID(as_uuid=True),
        "strings": Strings(),
    }
    return types[kind]


def server_default(value: Any) -> Any:
    """The column default of a field default, as autogenerate renders and compares it; None for none."""
    if value is None or isinstance(value, str) and not isinstance(value, enum.Enum):
        return value
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, bool):
        return text("true" if value else "false")
    if isinstance(value, tuple) and not value:
        return text("'{}'")
    if isinstance(value, int):
        return text(str(value))
    raise TypeError(f"no column default is declared for a field default of {value!r}")


def column(declared: Declared) -> Column[Any]:
    default = server_default(declared.default) if declared.has_default else None
    return Column(
        declared.name,
        sql_type(declared.type.kind),
        primary_key=declared.spec.key,
        nullable=declared.type.nullable,
        server_default=default,
    )
