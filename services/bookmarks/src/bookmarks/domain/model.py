"""The bookmark as a frozen domain object, and the pure rules that change it (no I/O here).

:class:`Bookmark` is the one declaration of a bookmark's fields (bookmarks.domain.fields): the table's
columns, the wire and PUT models, the JSON rendering, the exports and the reference client's model
follow from it, so adding a field is one attribute here plus generated files (docs/migrations.md).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import operator
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, StrictBool
from pydantic import Field as PydanticField

from bookmarks.domain.fields import SPEC, FieldSpec, Writable, declared_fields
from bookmarks.domain.tags import normalize_user_tags
from common.canonical import same_site_canonical
from common.events import EnrichmentResult
from common.validation import CLIENT_ID_RE, Text

CLIENT_BOOKMARK_ID_RE = CLIENT_ID_RE

# PUT body types of the fields whose rule is more than their type (bookmarks.domain.fields.Writable).
CollectionId = Annotated[Text, PydanticField(min_length=1, max_length=256)]
CollectionIds = Annotated[list[CollectionId], PydanticField(max_length=1000)]
# Validated item by item by the domain rule (400 naming userTags; never silently dropped).
UserTags = Annotated[
    list[str],
    PydanticField(description="The user's own tags: trimmed, 1-64 chars, no control characters, at most 50."),
    AfterValidator(lambda tags: list(normalize_user_tags(tags))),
]


def _text(max_length: int) -> Any:
    return Annotated[Text, PydanticField(max_length=max_length)] | None


class LinkStatus(enum.StrEnum):
    """What the last settled link check found (docs/api-guide.md, section 15); null: never checked."""

    OK = "ok"
    MOVED = "moved"
    GONE = "gone"
    BLOCKED = "blocked"
    UNREACHABLE = "unreachable"


# Cleared when a write changes the normalized URL: they described the old page (docs/api-guide.md, section 3).
ENRICHMENT_RESET: Mapping[str, Any] = {
    "summary": None,
    "save_why": None,
    "tags": (),
    "enrichment_status": "pending",
    "snapshot_status": "pending",
    "last_error_code": None,
    "enriched_at": None,
    "title": None,
    "description": None,
    "thumbnail_url": None,
    "link_status": None,
    "link_checked_at": None,
    "link_moved_to": None,
    "canonical_url": None,
}


def _client(default: Any = dataclasses.MISSING, **writable: Any) -> Any:
    """A field a client write may set (docs/api-guide.md, sections 3 and 11); the rest are the server's.
    ``writable``: the PUT rule (:class:`~bookmarks.domain.fields.Writable`) when the type alone does not say it."""
    return field(default=default, metadata={SPEC: FieldSpec(client=Writable(**writable))})


def _spec(default: Any = dataclasses.MISSING, **spec: Any) -> Any:
    return field(default=default, metadata={SPEC: FieldSpec(**spec)})


@dataclass(frozen=True, slots=True)
class Bookmark:
    """One bookmark of one user; ``deleted_at`` set means it is a tombstone at position ``updated_at``.

    THE declaration of a bookmark's fields, in the wire resource's order: a new field is one attribute
    here (its type says its column, wire and export form, bookmarks.domain.fields), then ``make migration``,
    ``make wire-document-migration``, ``make client-model`` and ``make openapi`` (docs/migrations.md).
    """

    owner_uid: uuid.UUID = _spec(key=True)
    client_bookmark_id: str = _spec(key=True)
    url: str = _client(annotation=Annotated[Text, PydanticField(max_length=2048)], put_default=..., check="f.url")
    normalized_url: str = _client(in_body=False)  # derived from url by the server, written together with it
    domain: str = _client(in_body=False)
    title: str | None = _client(None, annotation=_text(1000), check="f.nullable_text(1000)")
    description: str | None = _client(None, annotation=_text(10_000), check="f.nullable_text(10_000)")
    thumbnail_url: str | None = _client(None, annotation=_text(2048), check="f.nullable_text(2048)")
    summary: str | None = None
    save_why: str | None = _spec(None, pro_gated=True)
    tags: tuple[str, ...] = ()
    enrichment_status: str = "pending"
    snapshot_status: str = "pending"
    last_error_code: str | None = None
    is_favorite: bool = _client(False)
    collection_ids: tuple[str, ...] = _client((), annotation=CollectionIds | None, check="f.collection_ids")
    user_tags: tuple[str, ...] = _client(
        (), annotation=UserTags, put_default=PydanticField(default_factory=list), check="f.user_tags"
    )
    is_archived: bool = _client(False, annotation=StrictBool, put_default=False)
    notes: str | None = _client(None, annotation=_text(10_000), check="f.nullable_text(10_000)")
    client_saved_at: datetime | None = _client(None)
    last_opened_at: datetime | None = _client(None)
    created_at: datetime = field(kw_only=True)
    updated_at: datetime = field(kw_only=True)
    enriched_at: datetime | None = None
    link_status: LinkStatus | None = None
    link_checked_at: datetime | None = None
    link_moved_to: str | None = None
    # The page's own canonical URL, normalized, on the saved URL's site only (common.canonical): with the
    # normalized URL it makes the duplicates key (docs/api-guide.md, section 14).
    canonical_url: str | None = None
    deleted_at: datetime | None = _spec(None, on_wire=False)  # a tombstone is its own wire shape

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> Bookmark:
        record = record_from_row(cls, row)
        for name, enum_type, set_slot in _ENUM_SLOTS:  # stored as their value's text
            if (value := getattr(record, name)) is not None:
                set_slot(record, enum_type(value))
        return record

    def to_row(self) -> dict[str, Any]:
        """Column values for the store (tuples become lists for PostgreSQL arrays)."""
        return _write_fields(self)


BOOKMARK_FIELDS = declared_fields(Bookmark)
CLIENT_FIELDS = frozenset(f.name for f in BOOKMARK_FIELDS if f.client is not None)
# What a client's null means for a field that cannot be null: its default (isFavorite: null is false).
_NULL_MEANS_DEFAULT = {f.name: f.default for f in BOOKMARK_FIELDS if f.client is not None and not f.type.nullable}


R = TypeVar("R")
SlotSetter = Callable[[Any, Any], None]


@functools.cache
def _row_plan(cls: Any) -> tuple[Callable[[Mapping[Any, Any]], tuple[Any, ...]], tuple[SlotSetter, ...]]:
    names = tuple(f.name for f in dataclasses.fields(cls))
    return operator.itemgetter(*names), tuple(_slot_setter(cls, name) for name in names)


def _slot_setter(cls: type[Any], name: str) -> SlotSetter:
    setter: SlotSetter = cls.__dict__[name].__set__  # the slot's own descriptor
    return setter


def record_from_row(cls: type[R], row: Mapping[Any, Any]) -> R:
    """The frozen, slotted dataclass ``cls`` holding the row's column of each of its fields (a ``strings``
    column arrives as the tuple the domain keeps: bookmarks.store.columns.Strings).

    A stored row was checked when it was written, so its values go straight into the record's slots
    instead of through ``__init__`` (keyword arguments, defaults and a frozen ``__setattr__`` per field):
    half the cost for a bookmark's 33 fields, and an export of 100,000 bookmarks builds 200,000 records.
    The records hold no ``__post_init__``; a unit test holds the result equal to ``cls(**values)``.
    """
    key: Any = cls  # functools.cache wants a Hashable, which mypy does not see a class as
    getter, setters = _row_plan(key)
    record: R = object.__new__(cls)
    for set_slot, value in zip(setters, getter(row), strict=True):
        set_slot(record, value)
    return record


_ENUM_SLOTS = tuple(
    (f.name, f.type.enum, _slot_setter(Bookmark, f.name)) for f in BOOKMARK_FIELDS if f.type.enum is not None
)


def _write_fields(obj: Any) -> dict[str, Any]:
    return {
        f.name: list(value) if isinstance(value := getattr(obj, f.name), tuple) else value
        for f in dataclasses.fields(obj)
    }


@dataclass(frozen=True, slots=True)
class BookmarkWrite:
    """A client's PUT: only the fields it sent (``changes``), already validated and normalized."""

    changes: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, sent: Mapping[str, Any]) -> BookmarkWrite:
        unknown = set(sent) - CLIENT_FIELDS
        if unknown:
            raise ValueError(f"not client-writable: {sorted(unknown)}")
        changes = {k: tuple(v) if isinstance(v, list | tuple) else v for k, v in sent.items()}
        for name, default in _NULL_MEANS_DEFAULT.items():
            if name in changes and changes[name] is None and default is not dataclasses.MISSING:
                changes[name] = default
        if "collection_ids" in changes:
            changes["collection_ids"] = dedupe(changes["collection_ids"])
        return cls(changes)


def dedupe(ids: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(ids))


def new_bookmark(owner: uuid.UUID, client_bookmark_id: str, write: BookmarkWrite, position: datetime) -> Bookmark:
    """The record a first write creates (created and positioned at ``position``)."""
    return Bookmark(
        owner_uid=owner,
        client_bookmark_id=client_bookmark_id,
        created_at=position,
        updated_at=position,
        **write.changes,
    )


def merge_write(existing: Bookmark, write: BookmarkWrite, position: datetime) -> Bookmark | None:
    """Merge a write into a stored record: sent fields overwrite, absent ones keep, a tombstone revives.

    A changed normalized URL resets what enrichment said about the old page. Returns None when the
    write is redundant (a live record already in exactly that state): no new position, nothing to sync.
    """
    changes = dict(write.changes)
    if url_changed(existing, write):
        changes = {**ENRICHMENT_RESET, **changes}
    if not existing.is_deleted and all(getattr(existing, k) == v for k, v in changes.items()):
        return None
    return replace(existing, **changes, updated_at=position, deleted_at=None)


def url_changed(existing: Bookmark, write: BookmarkWrite) -> bool:
    return "normalized_url" in write.changes and existing.normalized_url != write.changes["normalized_url"]


def tombstone(
    existing: Bookmark | None, owner: uuid.UUID, client_bookmark_id: str, position: datetime
) -> Bookmark | None:
    """Soft-delete; an unknown id still gets a tombstone (offline create+delete replays converge).

    None when it is already deleted (idempotent: no new position).
    """
    if existing is None:
        return Bookmark(
            owner_uid=owner,
            client_bookmark_id=client_bookmark_id,
            url="",
            normalized_url="",
            domain="",
            created_at=position,
            updated_at=position,
            deleted_at=position,
        )
    if existing.is_deleted:
        return None
    return replace(existing, updated_at=position, deleted_at=position)


def with_collections(existing: Bookmark, collection_ids: Iterable[str], position: datetime) -> Bookmark | None:
    """Replace memberships exactly; None when nothing changes."""
    wanted = dedupe(collection_ids)
    if existing.collection_ids == wanted:
        return None
    return replace(existing, collection_ids=wanted, updated_at=position)


def without_collection(existing: Bookmark, collection_id: str, position: datetime) -> Bookmark | None:
    """Remove one collection id (the collection was deleted); None when the bookmark did not have it."""
    if collection_id not in existing.collection_ids:
        return None
    kept = tuple(c for c in existing.collection_ids if c != collection_id)
    return replace(existing, collection_ids=kept, updated_at=position)


def enrichment_applies(existing: Bookmark | None, normalized_url: str) -> bool:
    """A result applies to a live bookmark still pointing at the page it describes."""
    return existing is not None and not existing.is_deleted and existing.normalized_url == normalized_url


def apply_enrichment(
    existing: Bookmark, result: EnrichmentResult, enriched_at: datetime, position: datetime
) -> Bookmark:
    """Write the server's enrichment fields. Title, description and thumbnail are server-authoritative,
    but an empty value never erases what the user typed; the user's own fields are never touched. A
    canonical URL off the bookmark's site is dropped here too, whoever produced the result."""
    updated = replace(
        existing,
        canonical_url=same_site_canonical(existing.normalized_url, result.canonicalUrl),
        summary=result.summary,
        save_why=result.saveWhy,
        tags=tuple(result.tags),
        enrichment_status="completed",
        snapshot_status=result.snapshotStatus,
        last_error_code=None,
        enriched_at=enriched_at,
        updated_at=position,
    )
    if result.title:
        updated = replace(updated, title=result.title)
    if result.description:
        updated = replace(updated, description=result.description)
    if result.thumbnailUrl:
        updated = replace(updated, thumbnail_url=result.thumbnailUrl)
    return updated


def apply_enrichment_failure(
    existing: Bookmark, status: str, error_code: str | None, position: datetime
) -> Bookmark | None:
    """Record a failed or retrying enrichment; None when a result is already there (late report)."""
    if existing.enrichment_status == "completed":
        return None
    snapshot = existing.snapshot_status
    if status == "failed" and snapshot in ("pending", "processing"):
        snapshot = "failed"  # final: no snapshot will be taken (docs/api-guide.md, section 6)
    return replace(
        existing,
        enrichment_status=status,
        last_error_code=error_code,
        snapshot_status=snapshot,
        updated_at=position,
    )


def link_check_applies(existing: Bookmark | None, normalized_url: str, checked_at: datetime) -> bool:
    """A link check applies to a live bookmark still pointing at the checked page, unless a later check
    was applied already (reports of one bookmark may arrive out of order)."""
    return enrichment_applies(existing, normalized_url) and (
        existing is not None and (existing.link_checked_at is None or existing.link_checked_at < checked_at)
    )


def apply_link_check(
    existing: Bookmark, status: LinkStatus, checked_at: datetime, moved_to: str | None, position: datetime
) -> Bookmark:
    """Write the server's link health fields; ``link_moved_to`` is kept only with ``moved``."""
    return replace(
        existing,
        link_status=status,
        link_checked_at=checked_at,
        link_moved_to=moved_to if status is LinkStatus.MOVED else None,
        updated_at=position,
    )


def with_position(existing: Bookmark, position: datetime) -> Bookmark:
    """Re-stream an unchanged record (e.g. its visible ``saveWhy`` changed with the plan)."""
    return replace(existing, updated_at=position)


def incoming_wins(existing: Bookmark | None, incoming: Bookmark) -> bool:
    """Account merge (docs/api-guide.md, section 2): the later ``updatedAt`` wins per id; a tie keeps the target's."""
    return existing is None or existing.updated_at < incoming.updated_at


def moved_to(record: Bookmark, target: uuid.UUID, position: datetime) -> Bookmark:
    """The source's winning record as it enters the target's stream at ``position``."""
    return replace(record, owner_uid=target, updated_at=position, deleted_at=position if record.is_deleted else None)
