"""The collection tree (docs/api-guide.md, section 11) as pure functions over local :class:`Collection` views.

The server owns the tree's rules; the client checks them against its local view so that a move the
server would refuse (a cycle, more than ten levels, more than 1,000 collections) is reported at once
instead of being queued and rejected later. It also shows the server's delete semantics before they
arrive: a deleted collection's children sit where the server moves them (its parent), and its id is
not shown on bookmarks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from bookmark_client.models import Collection

__all__ = ["MAX_COLLECTIONS", "MAX_DEPTH", "check_parent", "collection_names", "effective_parent", "walk"]

MAX_DEPTH = 10
MAX_COLLECTIONS = 1000


def effective_parent(collection: Collection, by_id: Mapping[str, Collection]) -> str | None:
    """The live collection this one sits in: deleted parents are skipped the way the server moves children
    up; a parent this device has never seen counts as top level."""
    parent = collection.parent_id
    seen: set[str] = set()
    while parent is not None and parent not in seen:
        seen.add(parent)
        found = by_id.get(parent)
        if found is None:
            return None
        if not found.deleted:
            return parent
        parent = found.parent_id
    return None


def _children(collections: Iterable[Collection]) -> tuple[dict[str, Collection], dict[str | None, list[Collection]]]:
    by_id = {c.id: c for c in collections}
    children: dict[str | None, list[Collection]] = {}
    for c in by_id.values():
        if not c.deleted:
            children.setdefault(effective_parent(c, by_id), []).append(c)
    for siblings in children.values():
        siblings.sort(key=lambda c: (c.name.casefold(), c.id))
    return by_id, children


def walk(collections: Iterable[Collection]) -> list[tuple[int, Collection]]:
    """Live collections depth-first, siblings by name, with their level (1 = top level).

    A cycle (only possible transiently, from queued moves over a newer server copy) cannot hide
    collections: whatever the roots do not reach is listed at the top level.
    """
    by_id, children = _children(collections)
    out: list[tuple[int, Collection]] = []
    placed: set[str] = set()

    def visit(node: Collection, level: int) -> None:
        placed.add(node.id)
        out.append((level, node))
        for child in children.get(node.id, []):
            if child.id not in placed:
                visit(child, level + 1)

    for root in children.get(None, []):
        visit(root, 1)
    for c in sorted(by_id.values(), key=lambda c: (c.name.casefold(), c.id)):
        if not c.deleted and c.id not in placed:
            visit(c, 1)
    return out


def _level(collection_id: str, by_id: Mapping[str, Collection]) -> int:
    level, current, seen = 1, by_id[collection_id], {collection_id}
    while (parent := effective_parent(current, by_id)) is not None and parent not in seen:
        seen.add(parent)
        level += 1
        current = by_id[parent]
    return level


def _height(collection_id: str, children: Mapping[str | None, list[Collection]], seen: set[str]) -> int:
    seen.add(collection_id)
    below = [_height(c.id, children, seen) for c in children.get(collection_id, []) if c.id not in seen]
    return 1 + max(below, default=0)


def check_parent(collections: Iterable[Collection], collection_id: str, parent_id: str | None) -> None:
    """Raise ``ValueError`` if putting ``collection_id`` (new or existing) under ``parent_id`` breaks a rule."""
    by_id, children = _children(collections)
    existing = by_id.get(collection_id)
    if existing is None or existing.deleted:
        live = sum(1 for c in by_id.values() if not c.deleted)
        if live >= MAX_COLLECTIONS:
            raise ValueError(f"at most {MAX_COLLECTIONS} collections")
    if parent_id is None:
        height = _height(collection_id, children, set())
        if height > MAX_DEPTH:
            raise ValueError(f"collections nest at most {MAX_DEPTH} levels deep")
        return
    parent = by_id.get(parent_id)
    if parent is None or parent.deleted:
        raise ValueError(f"parent collection {parent_id!r} does not exist (run `bookmarks sync` if it is new)")
    ancestor: str | None = parent_id
    seen: set[str] = set()
    while ancestor is not None and ancestor not in seen:
        if ancestor == collection_id:
            raise ValueError(f"collection {collection_id!r} cannot be moved into itself or one of its descendants")
        seen.add(ancestor)
        ancestor = effective_parent(by_id[ancestor], by_id)
    if _level(parent_id, by_id) + _height(collection_id, children, set()) > MAX_DEPTH:
        raise ValueError(f"collections nest at most {MAX_DEPTH} levels deep")


def collection_names(ids: Iterable[str], by_id: Mapping[str, Collection]) -> list[str]:
    """How a bookmark's ``collectionIds`` read (``by_id``: local collections, deleted ones included): names
    of live collections, unknown ids as themselves (an offline device may file a bookmark before the
    collection arrives), deleted ones left out."""
    names: list[str] = []
    for collection_id in ids:
        found = by_id.get(collection_id)
        if found is None:
            names.append(collection_id)
        elif not found.deleted:
            names.append(found.name)
    return names
