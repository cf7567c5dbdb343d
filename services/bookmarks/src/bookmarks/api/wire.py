"""The one path from domain objects to the wire: upsert responses and delta pages both use it.

Each wire model's fields are the domain object's attributes in camelCase, so a new field appears on the
wire by adding it to the wire model (``api/schemas.py``); values are formatted here by type.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime
from operator import attrgetter
from typing import Any

from pydantic import BaseModel
from pydantic.alias_generators import to_snake
from pydantic_core import to_json

from bookmarks.api import schemas
from bookmarks.domain.collections import Collection
from bookmarks.domain.model import Bookmark

# Wire name -> domain attribute, for the names that are not plain camelCase of the attribute.
_RENAMED = {"id": "collection_id"}


def iso(ts: datetime | None) -> str | None:
    # Microseconds always: positions one microsecond apart must stay distinguishable to clients.
    return ts.isoformat(timespec="microseconds").replace("+00:00", "Z") if ts is not None else None


Converter = Callable[[Any], Any]


def _iso_or_none(value: Any) -> Any:
    return iso(value)


def _converter(record_type: type[Any], attr: str) -> Converter | None:
    """How a record attribute becomes JSON, decided once per field from the record's annotation."""
    annotation = str({f.name: f.type for f in dataclasses.fields(record_type)}[attr])
    if "datetime" in annotation:
        return _iso_or_none
    if annotation.startswith("tuple["):
        return list
    if "UUID" in annotation:
        return str
    return None


Renderer = Callable[[Any], dict[str, Any]]


def _plan(model: type[BaseModel], record_type: type[Any]) -> Renderer:
    """A record → wire dict function built once per model: one ``attrgetter`` call fetches every
    attribute, and only the fields that need it are converted (the delta path renders 1,000 per page)."""
    names = tuple(model.model_fields)
    attrs = [_RENAMED.get(name, to_snake(name)) for name in names]
    fetch = attrgetter(*attrs)
    converted = tuple((i, c) for i, attr in enumerate(attrs) if (c := _converter(record_type, attr)) is not None)

    def render(record: Any) -> dict[str, Any]:
        values = list(fetch(record))
        for i, convert in converted:
            values[i] = convert(values[i])
        return dict(zip(names, values, strict=True))

    return render


_BOOKMARK = _plan(schemas.Bookmark, Bookmark)
_COLLECTION = _plan(schemas.Collection, Collection)


def dumps(payload: Any) -> bytes:
    """JSON of an already wire-shaped payload, serialised once (pydantic-core's Rust encoder)."""
    return to_json(payload)


def bookmark(record: Bookmark, *, is_pro: bool) -> dict[str, Any]:
    """The spec's Bookmark resource; ``saveWhy`` is Pro-gated (docs/api-guide.md §3)."""
    out = _BOOKMARK(record)
    if not is_pro:
        out["saveWhy"] = None
    return out


def bookmark_tombstone(record: Bookmark) -> dict[str, Any]:
    return {"clientBookmarkId": record.client_bookmark_id, "deletedAt": iso(record.deleted_at)}


def collection(record: Collection) -> dict[str, Any]:
    return _COLLECTION(record)


def collection_tombstone(record: Collection) -> dict[str, Any]:
    return {"id": record.collection_id, "deletedAt": iso(record.deleted_at)}
