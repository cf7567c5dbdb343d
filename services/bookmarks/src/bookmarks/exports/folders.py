"""The collection tree of an export, in the order every format writes it (pure, no I/O).

Collections come out parents before children, depth first, siblings by name (case-insensitive) then id,
so the Netscape file nests folders correctly and the JSON export lists a parent before its children.
A collection whose parent is not among the live ones (possible only transiently, and never trusted here)
is treated as a top-level one; a parent cycle (impossible through the API) is broken the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bookmarks.domain.collections import Collection

__all__ = ["Folder", "FolderTree", "first_folder"]


@dataclass(frozen=True, slots=True)
class Folder:
    """One collection at its place in the tree: ``rank`` is its 1-based pre-order position."""

    collection: Collection
    rank: int
    depth: int  # 1 for a top-level collection
    path: tuple[str, ...]  # names, root first

    @property
    def id(self) -> str:
        return self.collection.collection_id


@dataclass(frozen=True, slots=True)
class FolderTree:
    folders: tuple[Folder, ...]  # pre-order

    @classmethod
    def of(cls, collections: Iterable[Collection]) -> FolderTree:
        live = {c.collection_id: c for c in collections if not c.is_deleted}
        children: dict[str | None, list[Collection]] = {}
        for c in live.values():
            parent = c.parent_id if c.parent_id in live and c.parent_id != c.collection_id else None
            children.setdefault(parent, []).append(c)
        for siblings in children.values():
            siblings.sort(key=lambda c: (c.name.casefold(), c.name, c.collection_id))
        out: list[Folder] = []
        placed: set[str] = set()
        _walk(children, None, (), out, placed)
        for c in sorted(live.values(), key=lambda c: c.collection_id):  # members of a parent cycle
            if c.collection_id not in placed:
                _walk({None: [c]} | {k: v for k, v in children.items() if k is not None}, None, (), out, placed)
        return cls(tuple(out))

    def ids(self) -> list[str]:
        """Collection ids in pre-order (``ids()[rank - 1]`` is the folder of that rank)."""
        return [f.id for f in self.folders]

    def by_id(self) -> dict[str, Folder]:
        return {f.id: f for f in self.folders}


def first_folder(index: dict[str, Folder], collection_ids: Sequence[str]) -> Folder | None:
    """The folder of a bookmark in the Netscape file: its first collection that is a live one."""
    return next((index[cid] for cid in collection_ids if cid in index), None)


def _walk(
    children: dict[str | None, list[Collection]],
    parent: str | None,
    path: tuple[str, ...],
    out: list[Folder],
    placed: set[str],
) -> None:
    for c in children.get(parent, ()):
        if c.collection_id in placed:
            continue
        placed.add(c.collection_id)
        here = (*path, c.name)
        out.append(Folder(collection=c, rank=len(out) + 1, depth=len(here), path=here))
        _walk(children, c.collection_id, here, out, placed)
