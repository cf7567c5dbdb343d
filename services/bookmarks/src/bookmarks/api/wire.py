"""The one path from domain objects to the wire: upsert responses, search results and delta pages.

Each wire model's fields are the domain object's attributes in camelCase (the Bookmark wire model is
built from the record's declaration, ``api/schemas.py``); values are formatted here by their declared
kind (bookmarks.domain.fields).

One plan per wire model (:func:`_fields`: wire name, attribute, kind of value) is carried out two ways:
in Python for a single record (:func:`bookmark`, :func:`collection`, :func:`highlight`), and compiled to SQL
for delta pages (the ``sql_*`` functions, gathered in ``bookmarks.sync.documents``) and the JSON export,
so a 1,000-record page builds no Python object per record (docs/decisions/0052-stored-delta-documents.md).
A bookmark's document is rendered once per write, by a trigger whose body is this plan compiled against the new row
(:func:`document_function_sql`, frozen in a migration; a unit test says when the plan drifts from it),
and stored without ``saveWhy``, which a page appends under the Pro gate. Collections, highlights and
tombstones are rendered by the page's own statement. An integration test holds SQL and Python equal field by field.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping
from datetime import date, datetime
from operator import attrgetter
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.alias_generators import to_snake
from pydantic_core import to_json
from sqlalchemy import ColumnElement, Table, Text, case, cast, func, literal, null
from sqlalchemy.dialects.postgresql import asyncpg
from starlette.responses import Response

from bookmarks.api import schemas
from bookmarks.domain.collections import Collection
from bookmarks.domain.fields import Kind as DeclaredKind
from bookmarks.domain.fields import declared_fields
from bookmarks.domain.model import BOOKMARK_FIELDS, Bookmark
from bookmarks.highlights.rules import Highlight
from bookmarks.store.tables import bookmarks

# Wire name -> domain attribute, per record, for the names that are not plain camelCase of the attribute.
_COLLECTION_NAMES = {"id": "collection_id"}
_HIGHLIGHT_NAMES = {
    "id": "highlight_id",
    "bookmarkId": "client_bookmark_id",
    "start": "quote_start",
    "end": "quote_end",
}


def iso(ts: datetime | None) -> str | None:
    # Microseconds always: positions one microsecond apart must stay distinguishable to clients.
    return ts.isoformat(timespec="microseconds").replace("+00:00", "Z") if ts is not None else None


Kind = Literal["iso", "date", "list", "str", "plain"]
Field = tuple[str, str, Kind]  # wire name, domain attribute (= column name), how its value is written

# How a declared kind becomes JSON (bookmarks.domain.fields): timestamps as iso(), dates as YYYY-MM-DD,
# text[] as an array; UUIDs, enum values and decimals as strings (a decimal keeps its digits, which a
# JSON number read as a double would not); text, numbers and booleans as they are.
_WIRE_KINDS: Mapping[DeclaredKind, Kind] = {
    "timestamp": "iso",
    "date": "date",
    "strings": "list",
    "uuid": "str",
    "enum": "str",
    "decimal": "str",
    "text": "plain",
    "int": "plain",
    "bool": "plain",
}


def _kind(record_type: type[Any], attr: str) -> Kind:
    """How a record attribute becomes JSON, from the field's declared type."""
    declared = {f.name: f for f in declared_fields(record_type)}[attr]
    return _WIRE_KINDS[declared.type.kind]


def _fields(model: type[BaseModel], record_type: type[Any], renamed: Mapping[str, str]) -> tuple[Field, ...]:
    attrs = ((name, renamed.get(name, to_snake(name))) for name in model.model_fields)
    return tuple((name, attr, _kind(record_type, attr)) for name, attr in attrs)


def _iso_or_none(value: Any) -> Any:
    return iso(value)


def _date_or_none(value: date | None) -> str | None:
    return value.isoformat() if value is not None else None


def _str_or_none(value: Any) -> str | None:
    return str(value) if value is not None else None


_PYTHON: Mapping[Kind, Callable[[Any], Any] | None] = {
    "iso": _iso_or_none,
    "date": _date_or_none,
    "list": list,
    "str": _str_or_none,
    "plain": None,
}

Renderer = Callable[[Any], dict[str, Any]]


def _plan(fields: tuple[Field, ...]) -> Renderer:
    """A record → wire dict function built once per model: one ``attrgetter`` call fetches every
    attribute, and only the fields that need it are converted."""
    names = tuple(name for name, _, _ in fields)
    fetch = attrgetter(*(attr for _, attr, _ in fields))
    converted = tuple((i, c) for i, (_, _, kind) in enumerate(fields) if (c := _PYTHON[kind]) is not None)

    def render(record: Any) -> dict[str, Any]:
        values = list(fetch(record))
        for i, convert in converted:
            values[i] = convert(values[i])
        return dict(zip(names, values, strict=True))

    return render


# --- the same plans compiled to SQL (delta pages) ----------------------------------------------------

# iso() in PostgreSQL: UTC, always six fractional digits, "Z".
_ISO_FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'
_DATE = "YYYY-MM-DD"


def _sql_value(column: ColumnElement[Any], kind: Kind) -> ColumnElement[Any]:
    """The JSON text of one value ('null' for NULL)."""
    rendered: ColumnElement[Any]
    if kind in ("iso", "date"):  # to_char's output needs no escaping
        text = func.to_char(func.timezone("UTC", column), _ISO_FORMAT) if kind == "iso" else func.to_char(column, _DATE)
        rendered = literal('"', Text()).op("||")(text).op("||")('"')
    else:  # strings escaped, booleans, numbers and text[] (a JSON array) as they are
        rendered = cast(func.to_json(cast(column, Text) if kind == "str" else column), Text)
    return func.coalesce(rendered, literal("null", Text()))


Member = tuple[str, ColumnElement[Any], Kind]  # wire name, SQL value, how it is written


def _sql_members(values: Iterable[Member], first: bool = True) -> list[ColumnElement[Any]]:
    """``"name":value`` of each value (its JSON text, :func:`_sql_value`), each but the first preceded by
    a comma, and the first by the opening brace when ``first``."""
    members: list[ColumnElement[Any]] = []
    for i, (name, value, kind) in enumerate(values):
        key = literal(("{" if first and i == 0 else ",") + json.dumps(name) + ":", Text())
        members.append(key.op("||")(_sql_value(value, kind)))
    assert members, "a wire model has at least one field"
    return members


def _concat(parts: Iterable[ColumnElement[Any]]) -> ColumnElement[Any]:
    return functools.reduce(lambda left, right: left.op("||")(right), parts)


def _sql_object(values: Iterable[Member]) -> ColumnElement[Any]:
    """``{"name":value,…}`` concatenated from each value's JSON text: 30 % cheaper for PostgreSQL than
    ``json_build_object``, which looks up the type of every argument on every row."""
    return _concat([*_sql_members(values), literal("}", Text())])


def _sql_plan(fields: tuple[Field, ...], table: Table) -> ColumnElement[Any]:
    return _sql_object((name, table.c[attr], kind) for name, attr, kind in fields)


_BOOKMARK_FIELDS = _fields(schemas.Bookmark, Bookmark, {})
_COLLECTION_FIELDS = _fields(schemas.Collection, Collection, _COLLECTION_NAMES)
_HIGHLIGHT_FIELDS = _fields(schemas.Highlight, Highlight, _HIGHLIGHT_NAMES)
_BOOKMARK = _plan(_BOOKMARK_FIELDS)
_COLLECTION = _plan(_COLLECTION_FIELDS)
_HIGHLIGHT = _plan(_HIGHLIGHT_FIELDS)
# Pro-gated (declared so): never stored, appended by each page for the reader's plan.
(_GATED,) = (schemas.wire_name(f) for f in BOOKMARK_FIELDS if f.spec.pro_gated)
_STORED_FIELDS = tuple(field for field in _BOOKMARK_FIELDS if field[0] != _GATED)
_OWNER = "ownerUid"  # left out of exports (a file is portable)


def document_function_sql() -> str:
    """The trigger function that renders a bookmark's stored document on every insert and update: the
    document of :func:`bookmark` without ``saveWhy`` and the closing brace. Frozen in the latest
    ``migrations/versions/*_wire_document.sql``; a new wire field is a revision that installs this
    function again and re-renders the rows, which ``make wire-document-migration`` writes."""
    new = bookmarks.alias("new")
    members = _sql_members((name, new.c[attr], kind) for name, attr, kind in _STORED_FIELDS)
    dialect = asyncpg.dialect()  # type: ignore[no-untyped-call]
    lines = "\n    || ".join(str(m.compile(dialect=dialect, compile_kwargs={"literal_binds": True})) for m in members)
    return (
        "CREATE OR REPLACE FUNCTION bookmark_wire_document() RETURNS trigger\n"
        "LANGUAGE plpgsql AS $wire$\nBEGIN\n  NEW.wire_document := " + lines + ";\n"
        "  RETURN NEW;\nEND\n$wire$"
    )


def dumps(payload: Any) -> bytes:
    """JSON of an already wire-shaped payload, serialised once (pydantic-core's Rust encoder)."""
    return to_json(payload)


def json_response(payload: Any) -> Response:
    """The answer of a route whose payload is already wire-shaped: :func:`dumps`, without FastAPI
    validating it again against the route's response model (which still documents it)."""
    return Response(dumps(payload), media_type="application/json")


def bookmark(record: Bookmark, *, is_pro: bool) -> dict[str, Any]:
    """The spec's Bookmark resource; ``saveWhy`` is Pro-gated (docs/api-guide.md, section 3)."""
    out = _BOOKMARK(record)
    if not is_pro:
        out[_GATED] = None
    return out


def bookmark_tombstone(record: Bookmark) -> dict[str, Any]:
    return {"clientBookmarkId": record.client_bookmark_id, "deletedAt": iso(record.deleted_at)}


def collection(record: Collection) -> dict[str, Any]:
    return _COLLECTION(record)


def collection_tombstone(record: Collection) -> dict[str, Any]:
    return {"id": record.collection_id, "deletedAt": iso(record.deleted_at)}


def highlight(record: Highlight) -> dict[str, Any]:
    return _HIGHLIGHT(record)


def highlight_tombstone(record: Highlight) -> dict[str, Any]:
    return {"id": record.highlight_id, "deletedAt": iso(record.deleted_at)}


# --- the SQL documents of delta pages (gathered in bookmarks.sync.documents) -------------------------


def sql_bookmark(table: Table, is_pro: ColumnElement[bool]) -> ColumnElement[Any]:
    """:func:`bookmark` in SQL: the stored document (:func:`document_function_sql`) closed by ``saveWhy``,
    gated on the owner's plan read in the same statement."""
    return _concat([table.c.wire_document, _sql_gated(table, is_pro), literal("}", Text())])


def _sql_gated(table: Table, is_pro: ColumnElement[bool]) -> ColumnElement[Any]:
    """``,"saveWhy":…``: the Pro-gated member, null unless ``is_pro``."""
    gated = case((is_pro, table.c[to_snake(_GATED)]), else_=null())
    (member,) = _sql_members([(_GATED, gated, "plain")], first=False)
    return member


def sql_portable_bookmark(table: Table, is_pro: bool) -> ColumnElement[Any]:
    """An export's bookmark (docs/api-guide.md, section 13): :func:`sql_bookmark` without ``ownerUid`` (an
    export is portable) and left open, for the writer to append ``highlights`` and the closing brace. The
    owner's member is cut from the stored document as the trigger wrote it: a bare ``"`` only ever
    delimits a key or a value in JSON, so that text occurs nowhere else in it."""
    at = next(i for i, (name, _, _) in enumerate(_STORED_FIELDS) if name == _OWNER)
    name, attr, kind = _STORED_FIELDS[at]
    (member,) = _sql_members([(name, table.c[attr], kind)], first=at == 0)
    stored = func.replace(
        table.c.wire_document,
        member.op("||")(",") if at == 0 else member,
        literal("{" if at == 0 else "", Text()),
    )
    return stored.op("||")(_sql_gated(table, literal(is_pro)))


def sql_bookmark_tombstone(table: Table) -> ColumnElement[Any]:
    return _sql_object(
        [("clientBookmarkId", table.c.client_bookmark_id, "plain"), ("deletedAt", table.c.deleted_at, "iso")]
    )


def sql_collection(table: Table) -> ColumnElement[Any]:
    return _sql_plan(_COLLECTION_FIELDS, table)


def sql_collection_tombstone(table: Table) -> ColumnElement[Any]:
    return _sql_object([("id", table.c.collection_id, "plain"), ("deletedAt", table.c.deleted_at, "iso")])


def sql_highlight(table: Table) -> ColumnElement[Any]:
    return _sql_plan(_HIGHLIGHT_FIELDS, table)


def sql_highlight_tombstone(table: Table) -> ColumnElement[Any]:
    return _sql_object([("id", table.c.highlight_id, "plain"), ("deletedAt", table.c.deleted_at, "iso")])
