"""Collections (docs/api-guide.md, section 11): the frozen record and the nesting rules, without I/O."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from bookmarks.domain.model import _write_fields, record_from_row

MAX_DEPTH = 10  # levels count from 1 (a top-level collection)
MAX_LIVE = 1000


@dataclass(frozen=True, slots=True)
class Collection:
    owner_uid: uuid.UUID
    collection_id: str
    name: str
    created_at: datetime
    updated_at: datetime
    parent_id: str | None = None
    deleted_at: datetime | None = None

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> Collection:
        return record_from_row(cls, row)

    def to_row(self) -> dict[str, Any]:
        return _write_fields(self)


class NestingError(ValueError):
    """A collection write that breaks a rule of E2; the message is the client's."""


_KEEP = object()


@dataclass(frozen=True, slots=True)
class CollectionWrite:
    """A PUT body: ``name`` None when absent; ``parent_id`` :data:`KEEP_PARENT` when absent."""

    name: str | None
    parent_id: str | None | object = _KEEP


KEEP_PARENT = _KEEP


def live_parents(live: Mapping[str, str | None], collection_id: str) -> dict[str, str | None]:
    """``live`` (id → parent id of every live collection) without the one being written."""
    return {k: v for k, v in live.items() if k != collection_id}


def _depth_of(parents: Mapping[str, str | None], start: str | None) -> int:
    depth = 0
    node = start
    while node is not None and depth <= len(parents):
        depth += 1
        node = parents.get(node)
    return depth


def _subtree_height(parents: Mapping[str, str | None], root: str) -> int:
    """Levels of ``root``'s subtree, ``root`` included (1 for a leaf)."""
    children: dict[str, list[str]] = {}
    for child, parent in parents.items():
        if parent is not None:
            children.setdefault(parent, []).append(child)
    height, frontier = 0, [root]
    while frontier and height <= len(parents) + 1:
        height += 1
        frontier = [c for node in frontier for c in children.get(node, [])]
    return height


def check_placement(live: Mapping[str, str | None], collection_id: str, parent_id: str | None) -> None:
    """Raise :class:`NestingError` unless ``collection_id`` may sit under ``parent_id``.

    ``live`` maps every live collection of the user to its parent (the written one included when it
    exists). The parent must be live, must not be the collection or one of its descendants, and the
    deepest node of the moved subtree must stay within :data:`MAX_DEPTH` levels.
    """
    if parent_id is None:
        parent_depth = 0
    else:
        if parent_id not in live or parent_id == collection_id:
            raise NestingError("parentId must name another live collection of yours.")
        node: str | None = parent_id
        for _ in range(len(live) + 1):
            if node is None:
                break
            if node == collection_id:
                raise NestingError("parentId would make a cycle: it is inside this collection.")
            node = live.get(node)
        parent_depth = _depth_of(live, parent_id)
    height = _subtree_height(live, collection_id) if collection_id in live else 1
    if parent_depth + height > MAX_DEPTH:
        raise NestingError(f"Collections nest at most {MAX_DEPTH} levels deep.")


def check_count(live: Mapping[str, str | None], collection_id: str) -> None:
    if collection_id not in live and len(live) >= MAX_LIVE:
        raise NestingError(f"At most {MAX_LIVE} collections per user.")


def write_collection(
    existing: Collection | None,
    live: Mapping[str, str | None],
    *,
    owner: uuid.UUID,
    collection_id: str,
    write: CollectionWrite,
    position: datetime,
) -> Collection | None:
    """Create, revive or merge a collection; None when the write changes nothing (idempotent PUT).

    ``live`` maps the user's live collections to their parents. Raises :class:`NestingError`.
    """
    current = existing if existing is not None and not existing.is_deleted else None
    parent = (current.parent_id if current else None) if write.parent_id is KEEP_PARENT else write.parent_id
    assert parent is None or isinstance(parent, str)
    name = write.name if write.name is not None else (current.name if current else None)
    if name is None:
        raise NestingError("name is required to create a collection.")
    check_count(live, collection_id)
    if current is not None and current.name == name and current.parent_id == parent:
        return None
    check_placement(live, collection_id, parent)
    if existing is None:
        return Collection(owner, collection_id, name, created_at=position, updated_at=position, parent_id=parent)
    return replace(existing, name=name, parent_id=parent, updated_at=position, deleted_at=None)


def delete_collection(
    existing: Collection | None, owner: uuid.UUID, collection_id: str, position: datetime
) -> Collection | None:
    """Tombstone (also for an unknown id, like bookmarks); None when already deleted."""
    if existing is None:
        return Collection(owner, collection_id, "", created_at=position, updated_at=position, deleted_at=position)
    if existing.is_deleted:
        return None
    return replace(existing, updated_at=position, deleted_at=position)


def reparented(child: Collection, parent_id: str | None, position: datetime) -> Collection:
    """A child of a deleted collection moves up to the deleted one's parent."""
    return replace(child, parent_id=parent_id, updated_at=position)


def incoming_wins(existing: Collection | None, incoming: Collection) -> bool:
    return existing is None or existing.updated_at < incoming.updated_at


def moved_to(record: Collection, target: uuid.UUID, position: datetime) -> Collection:
    return replace(record, owner_uid=target, updated_at=position, deleted_at=position if record.is_deleted else None)
