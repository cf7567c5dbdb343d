"""Duplicates (docs/api-guide.md, section 14): list the groups, merge into the one kept.

A merge is one transaction: the stream row first, as by every write, then the bookmarks. The kept
bookmark is an ordinary upsert; the merged ones are deleted (tombstones, so they go to the trash) and
recorded with the bookmark they went into, so restoring them undoes the merge.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from bookmarks import service as bookmarks_service
from bookmarks.domain.errors import UserGone
from bookmarks.domain.model import Bookmark, tombstone
from bookmarks.duplicates import store
from bookmarks.duplicates.cursor import decode_group_cursor, encode_group_cursor
from bookmarks.duplicates.rules import merged, sort_time
from bookmarks.highlights import store as highlights_store
from bookmarks.service import BookmarkView
from bookmarks.store import lookups, repository
from common.db import SessionFactory, transaction
from common.errors import InvalidRequest
from common.outbox import add_events

__all__ = ["DuplicateGroup", "DuplicatesPage", "list_duplicates", "merge_duplicates"]


@dataclass(frozen=True, slots=True)
class DuplicateGroup:
    key: str
    bookmarks: list[Bookmark]


@dataclass(frozen=True, slots=True)
class DuplicatesPage:
    groups: list[DuplicateGroup]
    next_cursor: str | None
    is_pro: bool


async def list_duplicates(
    *, sessions: SessionFactory, owner: uuid.UUID, limit: int, cursor: str | None, secret: str
) -> DuplicatesPage:
    after = decode_group_cursor(cursor, owner=owner, secret=secret) if cursor else None
    async with transaction(sessions) as session:  # one snapshot for the groups and their members
        keys = await store.group_keys(session, owner, after=after, limit=limit + 1)
        shown = keys[:limit]
        members = await store.members(session, owner, [k.key for k in shown])
        is_pro = await lookups.is_pro(session, owner)
    by_key: dict[str, list[Bookmark]] = defaultdict(list)
    for member in sorted(members, key=lambda m: (sort_time(m.record), m.record.client_bookmark_id)):
        by_key[member.key].append(member.record)  # oldest save first
    groups = [DuplicateGroup(k.key, by_key[k.key]) for k in shown if len(by_key[k.key]) > 1]
    next_cursor = encode_group_cursor(shown[-1], owner=owner, secret=secret) if len(keys) > limit else None
    return DuplicatesPage(groups, next_cursor, is_pro)


async def merge_duplicates(
    *, sessions: SessionFactory, owner: uuid.UUID, keep: str, merge: Sequence[str]
) -> BookmarkView:
    if keep in merge:
        raise InvalidRequest("'keep' must not be one of the bookmarks in 'merge'.")
    async with transaction(sessions) as session:
        if await repository.open_stream(session, owner) is None:
            raise UserGone()
        found = await store.live_for_update(session, owner, [keep, *merge])
        kept_keyed, others = found.get(keep), [found.get(bid) for bid in dict.fromkeys(merge)]
        if kept_keyed is None or any(other is None for other in others):
            raise InvalidRequest("Every id must be a live bookmark of yours.")
        if any(other is not None and other.key != kept_keyed.key for other in others):
            raise InvalidRequest("Only duplicates of the kept bookmark can be merged into it.")
        kept, merging = kept_keyed.record, [other.record for other in others if other is not None]
        first, is_pro = await repository.allocate_positions(session, owner, len(merging) + 1)
        try:
            result = merged(kept, merging, first)
        except ValueError as exc:
            raise InvalidRequest(f"The merged bookmark would break a rule: {exc}.") from None
        dead = [
            tombstone(other, owner, other.client_bookmark_id, first + (i + 1) * repository.ONE_MICROSECOND)
            for i, other in enumerate(merging)
        ]
        deleted = [record for record in dead if record is not None]
        await highlights_store.move_to(session, owner, [r.client_bookmark_id for r in deleted], keep)
        await repository.update_bookmarks(session, [result, *deleted])
        await store.record_merges(session, owner, keep, deleted)
        await add_events(session, [bookmarks_service.change_event(r) for r in (result, *deleted)])
    return BookmarkView(result, is_pro)
