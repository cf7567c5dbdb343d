"""bookmarks.domain.fields and what follows from it: each declared type resolves from the real type
objects to one kind, and every layer (column, PUT and wire models, JSON in Python and in SQL) has a form
for every kind, Optional variants included."""

from __future__ import annotations

import dataclasses
import enum
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, Optional

import pytest
from pydantic import ValidationError, create_model
from sqlalchemy import ARRAY, BigInteger, Boolean, Date, DateTime, Numeric, Text, text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.types import TypeDecorator

from bookmarks.api import schemas, wire
from bookmarks.domain.fields import SPEC, FieldSpec, FieldType, Writable, declared_fields, field_type
from bookmarks.domain.model import BOOKMARK_FIELDS, CLIENT_FIELDS, Bookmark, BookmarkWrite
from bookmarks.store.columns import column, server_default, sql_type


class Shade(enum.StrEnum):
    LIGHT = "light"
    DARK = "dark"


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, FieldType("text")),
        (int, FieldType("int")),
        (bool, FieldType("bool")),
        (datetime, FieldType("timestamp")),
        (date, FieldType("date")),
        (Decimal, FieldType("decimal")),
        (uuid.UUID, FieldType("uuid")),
        (Shade, FieldType("enum", enum=Shade)),
        (tuple[str, ...], FieldType("strings")),
        (str | None, FieldType("text", nullable=True)),
        (Optional[date], FieldType("date", nullable=True)),  # noqa: UP045 - the old spelling resolves alike
        (Decimal | None, FieldType("decimal", nullable=True)),
        (Shade | None, FieldType("enum", nullable=True, enum=Shade)),
        (None | int, FieldType("int", nullable=True)),
        (tuple[str, ...] | None, FieldType("strings", nullable=True)),
    ],
)
def test_a_declared_type_resolves_to_its_kind(annotation: Any, expected: FieldType) -> None:
    assert field_type(annotation) == expected


@pytest.mark.parametrize("annotation", [float, list[str], tuple[int, ...], str | int | None, dict[str, str], "str"])
def test_a_type_without_a_declared_form_is_refused(annotation: Any) -> None:
    with pytest.raises(TypeError):
        field_type(annotation)


def test_the_kind_comes_from_the_type_object_not_its_spelling() -> None:
    # A field named and typed to fool substring matching ("datetime" in the name, a str type).
    @dataclass
    class Tricky:
        datetime_note: str
        updated: Optional[datetime] = None  # noqa: UP045

    kinds = {f.name: f.type for f in declared_fields(Tricky)}
    assert kinds == {"datetime_note": FieldType("text"), "updated": FieldType("timestamp", nullable=True)}


@pytest.mark.parametrize(
    ("kind", "sql"),
    [
        ("text", Text),
        ("enum", Text),
        ("int", BigInteger),
        ("bool", Boolean),
        ("timestamp", DateTime),
        ("date", Date),
        ("decimal", Numeric),
        ("uuid", UUID),
        ("strings", ARRAY),
    ],
)
def test_every_kind_has_a_column_type(kind: Any, sql: type[Any]) -> None:
    column_type = sql_type(kind)
    assert isinstance(column_type.impl if isinstance(column_type, TypeDecorator) else column_type, sql)


def test_timestamps_keep_their_zone_and_defaults_become_server_defaults() -> None:
    assert sql_type("timestamp").timezone is True  # type: ignore[attr-defined]
    assert server_default("pending") == "pending"
    assert server_default(Shade.DARK) == "dark"
    assert str(server_default(False)) == "false" and str(server_default(True)) == "true"
    assert str(server_default(())) == "'{}'" and str(server_default(7)) == "7"
    assert server_default(None) is None
    with pytest.raises(TypeError):
        server_default(1.5)


@dataclass(frozen=True)
class Every:
    """One field of each kind and its Optional variant, read back from a row as the store would."""

    a_text: str = "x"
    a_int: int | None = None
    a_date: date | None = None
    a_decimal: Decimal | None = None
    a_shade: Shade = field(default=Shade.LIGHT, metadata={SPEC: FieldSpec(client=Writable())})
    a_list: tuple[str, ...] = field(default=(), metadata={SPEC: FieldSpec(client=Writable())})
    a_when: datetime | None = None
    a_flag: bool = False


def test_every_kind_renders_to_json_in_python() -> None:
    fields = tuple((schemas.wire_name(f), f.name, wire._kind(Every, f.name)) for f in declared_fields(Every))
    render = wire._plan(fields)
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    value = Every("t", 5, date(2026, 2, 3), Decimal("12.50"), Shade.DARK, ("a", "b"), when, True)
    assert render(value) == {
        "aText": "t",
        "aInt": 5,
        "aDate": "2026-02-03",
        "aDecimal": "12.50",
        "aShade": "dark",
        "aList": ["a", "b"],
        "aWhen": "2026-01-02T03:04:05.000000Z",
        "aFlag": True,
    }
    assert render(Every())["aDate"] is None and render(Every())["aDecimal"] is None


def test_every_kind_has_a_wire_type_and_a_put_type() -> None:
    wire_model = create_model(
        "W", **{schemas.wire_name(f): (schemas._wire_type(f), ...) for f in declared_fields(Every)}
    )  # type: ignore[call-overload]
    shown = wire_model.model_json_schema()["properties"]
    assert shown["aShade"]["enum"] == ["light", "dark"]
    assert shown["aDate"]["anyOf"][0] == {"type": "string", "format": "date"}
    put = create_model(
        "P",
        **{schemas.wire_name(f): schemas._put_field(f, f.client) for f in declared_fields(Every) if f.client},  # type: ignore[call-overload]
    )
    assert put.model_validate({"aShade": "dark", "aList": ["q"]}).model_dump() == {"aShade": Shade.DARK, "aList": ["q"]}
    for refused in ({"aShade": "dim"}, {"aList": "q"}, {"aList": ["x" * (schemas.MAX_TEXT + 1)]}):
        with pytest.raises(ValidationError):
            put.model_validate(refused)


def test_a_derived_date_put_type_takes_calendar_dates_only() -> None:
    declared = dataclasses.replace(declared_fields(Every)[2], spec=FieldSpec(client=Writable()))
    put = create_model("D", day=schemas._put_field(declared, Writable()))
    assert put.model_validate({"day": "2026-02-03"}).model_dump() == {"day": date(2026, 2, 3)}
    for refused in (1_700_000_000, "2026-02-30", "2026-02-03T00:00:00Z", "yesterday"):
        with pytest.raises(ValidationError):
            put.model_validate({"day": refused})


def test_a_derived_decimal_put_type_is_bounded() -> None:
    declared = dataclasses.replace(declared_fields(Every)[3], spec=FieldSpec(client=Writable()))
    put = create_model("N", amount=schemas._put_field(declared, Writable()))
    assert str(put.model_validate({"amount": "12.50"}).model_dump()["amount"]) == "12.50"
    assert str(put.model_validate({"amount": "1E+2"}).model_dump()["amount"]) == "100"
    for refused in ("1e100000", "NaN", "Infinity", "1" * (schemas.MAX_DECIMAL_DIGITS + 1)):
        with pytest.raises(ValidationError):
            put.model_validate({"amount": refused})


def test_the_bookmark_declaration_orders_the_wire_resource_and_marks_its_key_and_gate() -> None:
    assert [f.name for f in BOOKMARK_FIELDS if f.spec.key] == ["owner_uid", "client_bookmark_id"]
    assert [schemas.wire_name(f) for f in BOOKMARK_FIELDS if f.spec.on_wire] == list(schemas.Bookmark.model_fields)
    assert [f.name for f in BOOKMARK_FIELDS if f.spec.pro_gated] == ["save_why"]
    assert column(BOOKMARK_FIELDS[0]).primary_key and not column(BOOKMARK_FIELDS[0]).nullable
    assert str(column(next(f for f in BOOKMARK_FIELDS if f.name == "tags")).server_default.arg) == str(text("'{}'"))  # type: ignore[union-attr]


def test_a_client_null_for_a_field_that_cannot_be_null_is_its_default() -> None:
    write = BookmarkWrite.of({"is_favorite": None, "collection_ids": None, "user_tags": None})
    assert write.changes == {"is_favorite": False, "collection_ids": (), "user_tags": ()}
    assert BookmarkWrite.of({"title": None}).changes == {"title": None}  # nullable: null clears it
    assert {"normalized_url", "domain"} <= CLIENT_FIELDS
    assert dataclasses.fields(Bookmark)[0].name == "owner_uid"
