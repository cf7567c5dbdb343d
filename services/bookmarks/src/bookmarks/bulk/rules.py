"""What a bulk action does to one bookmark, and what undoing it does: pure, no I/O.

A change is recorded per bookmark as the one field it set, with the value before and after. Undo
puts ``before`` back only where the field still holds ``after``: a later write to that field wins, a
later write to another field does not stop the undo. A delete is undone by bringing the bookmark back
from the trash, if it is still there from this very delete.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final, Literal, get_args

from bookmarks.domain.model import Bookmark, dedupe, tombstone
from bookmarks.domain.tags import normalize_user_tags

__all__ = ["ACTIONS", "Action", "BulkArgs", "Change", "apply", "undo"]

Action = Literal[
    "archive",
    "unarchive",
    "favorite",
    "unfavorite",
    "delete",
    "addTags",
    "removeTags",
    "addToCollection",
    "removeFromCollection",
]
ACTIONS: Final[tuple[Action, ...]] = get_args(Action)
DELETED: Final = "deleted"
"""The pseudo-field of a delete: before False, after True."""
MAX_COLLECTIONS: Final = 1000


@dataclass(frozen=True, slots=True)
class BulkArgs:
    action: Action
    tags: tuple[str, ...] = ()
    collection_id: str | None = None

    def __post_init__(self) -> None:
        if self.action in ("addTags", "removeTags") and not self.tags:
            raise ValueError(f"{self.action} needs 'tags': at least one tag")
        if self.action in ("addToCollection", "removeFromCollection") and not self.collection_id:
            raise ValueError(f"{self.action} needs 'collectionId'")


@dataclass(frozen=True, slots=True)
class Change:
    client_bookmark_id: str
    field: str
    before: Any
    after: Any
    position: datetime
    """The stream position the bulk gave the bookmark."""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.client_bookmark_id, "field": self.field, "before": _json(self.before),
                "after": _json(self.after), "position": self.position.isoformat()}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Change:
        return cls(data["id"], data["field"], _value(data["before"]), _value(data["after"]),
                   datetime.fromisoformat(data["position"]))  # fmt: skip


def _json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _value(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def apply(record: Bookmark, args: BulkArgs, position: datetime) -> tuple[Bookmark, Change] | None:
    """``record`` after the action at ``position``, and the change; None when it changes nothing.
    ValueError when the result would break a field's rule (more than 50 tags, …)."""
    if args.action == "delete":
        dead = tombstone(record, record.owner_uid, record.client_bookmark_id, position)
        return None if dead is None else (dead, Change(record.client_bookmark_id, DELETED, False, True, position))
    field, value = _target(record, args)
    before = getattr(record, field)
    if before == value:
        return None
    changed = replace(record, **{field: value}, updated_at=position)
    return changed, Change(record.client_bookmark_id, field, before, value, position)


def _target(record: Bookmark, args: BulkArgs) -> tuple[str, Any]:
    match args.action:
        case "archive" | "unarchive":
            return "is_archived", args.action == "archive"
        case "favorite" | "unfavorite":
            return "is_favorite", args.action == "favorite"
        case "addTags":  # the tag rule of a PUT: deduplicated case-insensitively, at most 50
            return "user_tags", normalize_user_tags([*record.user_tags, *args.tags])
        case "removeTags":
            folded = {tag.casefold() for tag in args.tags}
            return "user_tags", tuple(tag for tag in record.user_tags if tag.casefold() not in folded)
        case "addToCollection":
            ids = dedupe((*record.collection_ids, args.collection_id or ""))
            if len(ids) > MAX_COLLECTIONS:
                raise ValueError(f"a bookmark is in at most {MAX_COLLECTIONS} collections")
            return "collection_ids", ids
        case "removeFromCollection":
            return "collection_ids", tuple(c for c in record.collection_ids if c != args.collection_id)
    raise ValueError(f"unknown action {args.action!r}")


def undo(current: Bookmark | None, change: Change, position: datetime) -> Bookmark | None:
    """``current`` with the change taken back at ``position``; None when a later write decided otherwise."""
    if current is None:
        return None
    if change.field == DELETED:
        from_this_delete = current.deleted_at == change.position and bool(current.url)
        return replace(current, deleted_at=None, updated_at=position) if from_this_delete else None
    if current.deleted_at is not None or getattr(current, change.field) != change.after:
        return None
    return replace(current, **{change.field: change.before}, updated_at=position)
