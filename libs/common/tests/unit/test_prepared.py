"""Prepared statements (common.db.Prepared): a Core statement compiled once for asyncpg, its parameters
in placeholder order with literals filled in and SQLAlchemy's bind processors applied."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import ARRAY, Boolean, Column, Interval, MetaData, Table, Text, bindparam, func, literal, select
from sqlalchemy.dialects.postgresql import UUID

from common.db import Prepared

things = Table(
    "things", MetaData(),
    Column("id", UUID(as_uuid=True), primary_key=True), Column("name", Text), Column("tags", ARRAY(Text)),
    Column("live", Boolean), Column("due", Interval),
)  # fmt: skip


def test_parameters_follow_the_placeholders_and_literals_are_filled_in() -> None:
    statement = select(things.c.id, (things.c.due + literal(timedelta(seconds=3), Interval())).label("later")).where(
        things.c.name == bindparam("name"), things.c.id == bindparam("id"), things.c.name != bindparam("name")
    )
    prepared = Prepared.of(statement)
    assert prepared.names == ("param_1", "name", "id")
    assert "$1::INTERVAL" in prepared.sql and "$2" in prepared.sql and "$3::UUID" in prepared.sql
    assert "$4" not in prepared.sql  # a name used twice is one placeholder
    owner = uuid.uuid4()
    assert prepared.arguments({"name": "a", "id": owner}) == [timedelta(seconds=3), "a", owner]
    assert [name for name, _ in prepared.results] == ["id", "later"]


def test_bind_processors_run_as_in_a_session() -> None:
    statement = select(things.c.id).where(things.c.live == bindparam("live", type_=Boolean()),
                                          things.c.tags == bindparam("tags", type_=ARRAY(Text)))  # fmt: skip
    prepared = Prepared.of(statement)
    assert set(prepared.binds) == {"live", "tags"}
    assert prepared.arguments({"live": 1, "tags": ("a", "b")}) == [True, ["a", "b"]]


def test_a_missing_parameter_is_an_error_not_a_null() -> None:
    prepared = Prepared.of(select(things.c.id).where(things.c.name == bindparam("name")))
    with pytest.raises(KeyError):
        prepared.arguments({})


def test_in_lists_cannot_be_prepared_once() -> None:
    with pytest.raises(ValueError, match="expanding"):
        Prepared.of(select(things.c.id).where(things.c.name.in_(bindparam("names", expanding=True))))


def test_a_statement_without_columns_returns_none() -> None:
    prepared = Prepared.of(things.insert().values(id=bindparam("id"), name=func.lower(bindparam("name"))))
    assert prepared.results == () and prepared.names == ("id", "name")


def test_returned_columns_are_the_rows_of_a_write() -> None:
    prepared = Prepared.of(things.insert().values(id=bindparam("id")).returning(things.c.id, things.c.live))
    assert [name for name, _ in prepared.results] == ["id", "live"]
