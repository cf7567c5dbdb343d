"""Pure rules of the import job (docs/api-guide.md, section 13): what one imported item does to the library.

An item whose normalized URL the user already has (live) merges into that bookmark: user tags and
collections are added, ``isFavorite``/``isArchived`` set when the item says so, empty text fields filled.
Otherwise it creates a bookmark. No I/O here; positions are given by the caller.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final, Literal

from bookmarks.domain.model import Bookmark, BookmarkWrite, dedupe, merge_write, new_bookmark
from bookmarks.highlights.rules import MAX_PER_BOOKMARK, MAX_PER_USER, Highlight
from bookmarks.imports.formats.model import MAX_TAGS, ImportHighlight, ImportItem

Outcome = Literal["created", "updated", "unchanged", "invalid"]

_TEXT_FIELDS: Final = ("title", "description", "notes", "thumbnail_url")


@dataclass(frozen=True, slots=True)
class Applied:
    """What an item did: the outcome and the bookmark as it now is (None for an invalid item)."""

    outcome: Outcome
    record: Bookmark | None


def _created_fields(item: ImportItem, collection_ids: tuple[str, ...]) -> dict[str, Any]:
    assert item.normalized_url is not None and item.domain is not None
    fields: dict[str, Any] = {
        "url": item.url,
        "normalized_url": item.normalized_url,
        "domain": item.domain,
        "title": item.title,
        "description": item.description,
        "notes": item.notes,
        "thumbnail_url": item.thumbnail_url,
        "user_tags": item.user_tags[:MAX_TAGS],
        "collection_ids": collection_ids,
        "is_favorite": item.is_favorite,
        "is_archived": item.is_archived,
        "client_saved_at": item.saved_at,
        "last_opened_at": item.last_opened_at,
    }
    return {k: v for k, v in fields.items() if v is not None}


def merged_tags(existing: tuple[str, ...], incoming: tuple[str, ...]) -> tuple[str, ...]:
    """``existing`` then the incoming tags it lacks (case-insensitively), at most ``MAX_TAGS``."""
    seen = {t.casefold() for t in existing}
    added: list[str] = []
    for tag in incoming:
        if tag.casefold() not in seen:
            seen.add(tag.casefold())
            added.append(tag)
    return (*existing, *added)[: max(MAX_TAGS, len(existing))]


def merge_changes(existing: Bookmark, item: ImportItem, collection_ids: tuple[str, ...]) -> dict[str, Any]:
    """The fields the item changes on ``existing`` (possibly values equal to the current ones)."""
    changes: dict[str, Any] = {
        "user_tags": merged_tags(existing.user_tags, item.user_tags),
        "collection_ids": dedupe((*existing.collection_ids, *collection_ids)),
    }
    if item.is_favorite is not None:
        changes["is_favorite"] = item.is_favorite
    if item.is_archived is not None:
        changes["is_archived"] = item.is_archived
    for name in _TEXT_FIELDS:
        value = getattr(item, name)
        if value is not None and not getattr(existing, name):
            changes[name] = value
    return changes


def apply_item(
    existing: Bookmark | None,
    item: ImportItem,
    *,
    owner: uuid.UUID,
    collection_ids: tuple[str, ...],
    new_id: str,
    position: datetime,
) -> Applied:
    """The item's effect on the user's live bookmark with its normalized URL (``existing``, or None)."""
    if not item.valid:
        return Applied("invalid", None)
    if existing is None:
        write = BookmarkWrite.of(_created_fields(item, collection_ids))
        return Applied("created", new_bookmark(owner, new_id, write, position))
    merged = merge_write(existing, BookmarkWrite(merge_changes(existing, item, collection_ids)), position)
    return Applied("unchanged", existing) if merged is None else Applied("updated", merged)


def positioned(record: Bookmark, position: datetime, *, created: bool) -> Bookmark:
    """``record`` moved to its real stream position (``created_at`` too for a new bookmark)."""
    if created:
        return replace(record, created_at=position, updated_at=position)
    return replace(record, updated_at=position)


def collection_key(parent_id: str | None, name: str) -> tuple[str | None, str]:
    """Collections are matched by name path: the same name under the same parent is the same one."""
    return parent_id, name


def path_lookup(live: Mapping[tuple[str | None, str], str], path: tuple[str, ...]) -> tuple[str | None, int]:
    """Walk ``path`` through existing collections: (id of the deepest match, how many levels matched)."""
    parent: str | None = None
    for depth, name in enumerate(path):
        found = live.get(collection_key(parent, name))
        if found is None:
            return parent, depth
        parent = found
    return parent, len(path)


# --- highlights ----------------------------------------------------------------------------------------


def highlight_key(h: ImportHighlight | Highlight) -> tuple[str, str, str]:
    """What makes two highlights of one bookmark the same passage: quote and context."""
    return h.quote, h.prefix, h.suffix


def imported_highlight_id(client_bookmark_id: str, h: ImportHighlight) -> str:
    """A stable id for an imported highlight (the same bookmark and passage, the same id), so importing
    a file again, or a batch again, never writes it twice."""
    digest = hashlib.sha256("\x00".join((client_bookmark_id, *highlight_key(h))).encode()).hexdigest()
    return f"imp-{digest[:40]}"


def highlight_limit(on_bookmark: int, of_user: int, adding: int) -> str | None:
    """Why adding ``adding`` highlights to the live counts is refused, or None."""
    if on_bookmark + adding > MAX_PER_BOOKMARK:
        return f"The bookmark would hold more than {MAX_PER_BOOKMARK:,} highlights."
    if of_user + adding > MAX_PER_USER:
        return f"You would keep more than {MAX_PER_USER:,} highlights."
    return None


def new_highlight(
    owner: uuid.UUID, highlight_id: str, client_bookmark_id: str, h: ImportHighlight, position: datetime
) -> Highlight:
    """An imported highlight, not anchored yet (the page's readable text anchors it when known)."""
    return Highlight(
        owner_uid=owner,
        highlight_id=highlight_id,
        client_bookmark_id=client_bookmark_id,
        quote=h.quote,
        prefix=h.prefix,
        suffix=h.suffix,
        quote_start=h.start,
        quote_end=h.end,
        color=h.color,
        note=h.note,
        anchor=None,
        created_at=position,
        updated_at=position,
    )
