"""What each layer needs to know about a field of a record, read from the record's own declaration.

A record (:class:`bookmarks.domain.model.Bookmark`) is a frozen dataclass; each field's declared Python
type says what its value is, and ``dataclasses.field(metadata={SPEC: FieldSpec(...)})`` says who writes
it and where it shows. :func:`declared_fields` resolves both once per record from the real type objects
(``typing.get_type_hints``), never from the annotation's spelling, into :class:`Declared` fields. The
table's columns (``store/columns.py``), the wire and PUT models (``api/schemas.py``), the JSON rendering
in Python and in SQL (``api/wire.py``), the CSV export and the reference client's model all follow from
them (docs/decisions/0121-one-declaration-per-bookmark-field.md).
"""

from __future__ import annotations

import dataclasses
import enum
import types
import uuid
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

__all__ = ["SPEC", "Declared", "FieldSpec", "FieldType", "Kind", "Writable", "declared_fields", "field_type"]

SPEC = "bookmarks.field"

# What a value is, whatever layer looks at it. ``strings`` is ``tuple[str, ...]`` (a text[] column).
Kind = Literal["text", "int", "bool", "timestamp", "date", "decimal", "enum", "uuid", "strings"]

_SCALARS: dict[type[Any], Kind] = {
    str: "text",
    int: "int",
    bool: "bool",
    datetime: "timestamp",
    date: "date",
    Decimal: "decimal",
    uuid.UUID: "uuid",
}


@dataclass(frozen=True, slots=True)
class FieldType:
    """A declared type resolved: its kind, whether None is allowed, and the enum class of an ``enum``."""

    kind: Kind
    nullable: bool = False
    enum: type[enum.StrEnum] | None = None


def field_type(annotation: Any) -> FieldType:
    """The :class:`FieldType` of a resolved annotation (``X``, ``X | None``, ``Optional[X]``)."""
    nullable = False
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) != 1 or len(get_args(annotation)) != 2:
            raise TypeError(f"a field is one type or one type | None, not {annotation!r}")
        annotation, nullable = members[0], True
    if get_origin(annotation) is tuple:
        if get_args(annotation) != (str, Ellipsis):
            raise TypeError(f"the only sequence field is tuple[str, ...], not {annotation!r}")
        return FieldType("strings", nullable)
    if isinstance(annotation, type) and issubclass(annotation, enum.StrEnum):
        return FieldType("enum", nullable, annotation)
    # bool before int and datetime before date: exact types only, so a subclass never passes for its base.
    kind = _SCALARS.get(annotation) if isinstance(annotation, type) else None
    if kind is None:
        raise TypeError(f"no column, wire or export form is declared for {annotation!r}")
    return FieldType(kind, nullable)


@dataclass(frozen=True, slots=True)
class Writable:
    """A field a client's PUT may set.

    ``annotation``: the PUT body's pydantic type (validation, error messages, OpenAPI); None derives it
    from the field's type (``api/schemas.py``). ``put_default``: what the body model shows when the field
    is absent (an absent field keeps the stored value either way). ``check``: the reference client's
    validator as an expression over ``bookmark_client.fields`` (``f``); None derives it from the type.
    ``in_body``: False for a field the server derives from the body within the same write
    (``normalized_url`` from ``url``): client-written, but not a member of the PUT body.
    """

    annotation: Any = None
    put_default: Any = None
    check: str | None = None
    in_body: bool = True


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """``client``: how a client writes it (None: only the server does). ``on_wire``: part of the API's
    resource. ``pro_gated``: shown to Pro readers only. ``key``: part of the primary key."""

    client: Writable | None = None
    on_wire: bool = True
    pro_gated: bool = False
    key: bool = False


_SERVER = FieldSpec()


@dataclass(frozen=True, slots=True)
class Declared:
    """One field of a record as every layer sees it."""

    name: str
    type: FieldType
    spec: FieldSpec
    default: Any  # dataclasses.MISSING when the record has no default for it

    @property
    def client(self) -> Writable | None:
        return self.spec.client

    @property
    def has_default(self) -> bool:
        return self.default is not dataclasses.MISSING


_RESOLVED: dict[type[Any], tuple[Declared, ...]] = {}


def declared_fields(record: type[Any]) -> tuple[Declared, ...]:
    """Every field of ``record`` in declaration order (resolved once per record)."""
    if record not in _RESOLVED:
        hints = get_type_hints(record)
        _RESOLVED[record] = tuple(
            Declared(f.name, field_type(hints[f.name]), f.metadata.get(SPEC, _SERVER), f.default)
            for f in dataclasses.fields(record)
        )
    return _RESOLVED[record]
