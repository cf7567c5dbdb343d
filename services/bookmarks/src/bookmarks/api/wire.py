"""The one path from domain objects to the wire: upsert responses and delta pages both use it.

Each wire model's fields are the domain object's attributes in camelCase, so a new field appears on the
wire by adding it to the wire model (``api/schemas.py``); values are formatted here by type.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from pydantic.alias_generators import to_snake

from bookmarks.api import schemas
from bookmarks.domain.collections import Collection
from bookmarks.domain.model import Bookmark

# Wire name -> domain attribute, for the names that are not plain camelCase of the attribute.
_RENAMED = {"id": "collection_id"}


def iso(ts: datetime | None) -> str | None:
    # Microseconds always: positions one microsecond apart must stay distinguishable to clients.
    return ts.isoformat(timespec="microseconds").replace("+00:00", "Z") if ts is not None else None


def _plan(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    return tuple((name, _RENAMED.get(name, to_snake(name))) for name in model.model_fields)


_BOOKMARK = _plan(schemas.Bookmark)
_COLLECTION = _plan(schemas.Collection)


def _value(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def bookmark(record: Bookmark, *, is_pro: bool) -> dict[str, Any]:
    """The spec's Bookmark resource; ``saveWhy`` is Pro-gated (decisions.md §4.5)."""
    out = {name: _value(getattr(record, attr)) for name, attr in _BOOKMARK}
    if not is_pro:
        out["saveWhy"] = None
    return out


def bookmark_tombstone(record: Bookmark) -> dict[str, Any]:
    return {"clientBookmarkId": record.client_bookmark_id, "deletedAt": iso(record.deleted_at)}


def collection(record: Collection) -> dict[str, Any]:
    return {name: _value(getattr(record, attr)) for name, attr in _COLLECTION}


def collection_tombstone(record: Collection) -> dict[str, Any]:
    return {"id": record.collection_id, "deletedAt": iso(record.deleted_at)}
