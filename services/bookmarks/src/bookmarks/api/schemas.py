"""Request and response models of the bookmarks API (field names exactly as the spec writes them)."""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    create_model,
    field_validator,
)
from pydantic.alias_generators import to_camel

from bookmarks.domain.fields import Declared, Kind, Writable
from bookmarks.domain.model import BOOKMARK_FIELDS, CollectionIds
from common.handlers import error_responses
from common.validation import CLIENT_ID_PATTERN, Text, Timestamp

ID_PATTERN = CLIENT_ID_PATTERN
# Bounds of a client-written field whose declaration names no PUT type of its own (bookmarks.domain.fields).
MAX_TEXT = 10_000
MAX_LIST_ITEMS = 1000
MAX_DECIMAL_DIGITS = 100


def _date(value: Any) -> Any:
    """Before pydantic's lax parsing, which would read a number as a Unix time: ``YYYY-MM-DD`` only."""
    if isinstance(value, date) or (isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value)):
        return value
    raise ValueError("must be a YYYY-MM-DD date string")


def _bigint(value: int) -> int:
    if not -(2**63) <= value < 2**63:
        raise ValueError("must fit in a 64-bit signed integer")
    return value


def _positional(value: Decimal) -> Decimal:
    """``1E+2`` as ``100``: the digits PostgreSQL's numeric keeps, so a response renders what delta will."""
    return Decimal(format(value, "f"))


_PUT_TYPES: dict[Kind, Any] = {
    "text": Annotated[Text, Field(max_length=MAX_TEXT)],
    "int": Annotated[StrictInt, AfterValidator(_bigint)],
    "bool": StrictBool,
    "timestamp": Timestamp,
    "date": Annotated[date, BeforeValidator(_date)],
    # PostgreSQL's numeric refuses what exceeds its range (a 500 otherwise) and has no Infinity to store.
    "decimal": Annotated[
        Decimal, Field(max_digits=MAX_DECIMAL_DIGITS, allow_inf_nan=False), AfterValidator(_positional)
    ],
    "strings": Annotated[list[Annotated[Text, Field(max_length=MAX_TEXT)]], Field(max_length=MAX_LIST_ITEMS)],
}
_WIRE_TYPES: dict[Kind, Any] = {
    "text": str,
    "int": int,
    "bool": bool,
    "timestamp": str,
    "date": Annotated[str, Field(json_schema_extra={"format": "date"})],
    "decimal": str,
    "uuid": str,
    "strings": list[str],
}


def wire_name(declared: Declared) -> str:
    return to_camel(declared.name)


def _put_field(declared: Declared, writable: Writable) -> tuple[Any, Any]:
    annotation = writable.annotation
    if annotation is None:
        base: Any = declared.type.enum if declared.type.enum is not None else _PUT_TYPES[declared.type.kind]
        annotation = base | None
    return annotation, writable.put_default


def _wire_type(declared: Declared) -> Any:
    field_type = declared.type
    wire: Any = (
        Literal[tuple(m.value for m in field_type.enum)]
        if field_type.enum is not None
        else _WIRE_TYPES[field_type.kind]
    )
    return wire | None if field_type.nullable else wire


# The PUT body's members in the order the API first published them; later fields follow in declaration order.
_PUT_ORDER = (
    "url", "client_saved_at", "title", "description", "thumbnail_url", "is_favorite", "notes",
    "last_opened_at", "collection_ids", "user_tags", "is_archived",
)  # fmt: skip


def _put_fields() -> dict[str, Any]:
    writable = [f for f in BOOKMARK_FIELDS if f.client is not None and f.client.in_body]
    writable.sort(key=lambda f: _PUT_ORDER.index(f.name) if f.name in _PUT_ORDER else len(_PUT_ORDER))
    return {wire_name(f): _put_field(f, f.client) for f in writable if f.client is not None}


class _UpsertBase(BaseModel):
    """PUT body. Absent fields keep their stored value; explicit null clears a nullable field."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)


# The client-writable fields of the record's declaration (bookmarks.domain.model.Bookmark).
BookmarkUpsert = create_model("BookmarkUpsert", __base__=_UpsertBase, __module__=__name__, **_put_fields())
BookmarkUpsert.__doc__ = _UpsertBase.__doc__

# The API's Bookmark resource: every declared field on the wire, in declaration order, camelCase.
Bookmark = create_model(
    "Bookmark",
    __module__=__name__,
    **{wire_name(f): (_wire_type(f), ...) for f in BOOKMARK_FIELDS if f.spec.on_wire},  # type: ignore[call-overload]
)


class CollectionsReplace(BaseModel):
    model_config = ConfigDict(extra="ignore")

    collectionIds: CollectionIds


class BookmarkEnvelope(BaseModel):
    data: Bookmark


class Tombstone(BaseModel):
    clientBookmarkId: str
    deletedAt: str


class CollectionUpsert(BaseModel):
    """PUT body: ``name`` required on create; an absent ``parentId`` keeps the stored parent."""

    model_config = ConfigDict(extra="ignore")

    name: Annotated[Text, Field(max_length=1000)] | None = None
    parentId: Annotated[str, Field(pattern=ID_PATTERN)] | None = None

    @field_validator("name")
    @classmethod
    def _trimmed_name(cls, value: str | None) -> str | None:
        if value is None:
            return None
        name = value.strip()
        if not 1 <= len(name) <= 200:
            raise ValueError("name must have 1-200 characters after trimming")
        return name


class Collection(BaseModel):
    id: str
    name: str
    parentId: str | None
    createdAt: str
    updatedAt: str


class CollectionEnvelope(BaseModel):
    data: Collection


class CollectionTombstone(BaseModel):
    id: str
    deletedAt: str


class Highlight(BaseModel):
    """A marked passage of a saved page, with the user's note (docs/api-guide.md, section 16)."""

    id: str
    bookmarkId: str
    quote: str
    prefix: str
    suffix: str
    start: int | None = Field(description="Offset of the quote in the readable text, in Unicode code points.")
    end: int | None
    color: str = Field(description="yellow | green | blue | pink | purple")
    note: str
    anchor: str | None = Field(description="exact | fuzzy | orphan; null while the page has no readable text.")
    createdAt: str
    updatedAt: str


class HighlightEnvelope(BaseModel):
    data: Highlight


class HighlightTombstone(BaseModel):
    id: str
    deletedAt: str


class DeltaData(BaseModel):
    cursor: str | None
    nextCursor: str | None
    upserts: list[Bookmark]
    tombstones: list[Tombstone]
    collections: list[Collection]
    collectionTombstones: list[CollectionTombstone]
    highlights: list[Highlight]
    highlightTombstones: list[HighlightTombstone]


class DeltaEnvelope(BaseModel):
    data: DeltaData


class ImportRecord(BaseModel):
    """An import (docs/api-guide.md, section 13); ``format`` is the detected one once the job has read the file."""

    id: str
    status: str = Field(description="queued | running | completed | failed")
    format: str
    total: int | None = Field(description="Items in the file; null until the job has counted them.")
    processed: int
    created: int
    updated: int
    unchanged: int
    invalid: int
    createdAt: str
    finishedAt: str | None
    error: str | None = Field(description="Why the whole import failed (an unreadable or unrecognised file).")


class ImportEnvelope(BaseModel):
    data: ImportRecord


ERROR_RESPONSES = error_responses(400, 401, 404, 413, 422, 429, 500, 503)


class SearchResult(BaseModel):
    bookmark: Bookmark
    snippet: str | None


class SearchData(BaseModel):
    results: list[SearchResult]
    nextCursor: str | None


class SearchEnvelope(BaseModel):
    data: SearchData
