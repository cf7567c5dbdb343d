"""Bookmark and collection use cases: each is one transaction that changes state and writes its events
together. The rules themselves are pure functions in ``domain/``; this module loads, applies, stores."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from bookmarks.domain import collections as collection_rules
from bookmarks.domain import model as rules
from bookmarks.domain.collections import Collection, CollectionWrite, NestingError
from bookmarks.domain.errors import BookmarkNotFound, InvalidCollection, UserGone
from bookmarks.domain.model import Bookmark, BookmarkWrite
from bookmarks.highlights import service as highlights_service
from bookmarks.highlights import store as highlights_store
from bookmarks.imports import store as imports_store
from bookmarks.store import digests, lookups, repository
from bookmarks.store.rows import PageText
from common import anti_entropy
from common.db import SessionFactory, single_statements, transaction
from common.events import (
    SEARCH_TEXT_MAX_BYTES,
    BookmarkDeleted,
    BookmarkSaved,
    CollectionChanged,
    EnrichmentCompleted,
    EnrichmentFailed,
    Event,
    LinkChecked,
    page_text_excerpt,
)
from common.outbox import add_events
from common.urls import normalize_url

_MICRO = repository.ONE_MICROSECOND


@dataclass(frozen=True, slots=True)
class BookmarkView:
    """A bookmark as its owner may see it now (``saveWhy`` is Pro-gated on the wire)."""

    record: Bookmark
    is_pro: bool


def _saved_event(
    record: Bookmark,
    *,
    created: bool = False,
    url_changed: bool = False,
    revived: bool = False,
    source: str | None = None,
) -> BookmarkSaved:
    return BookmarkSaved(
        userId=record.owner_uid,
        clientBookmarkId=record.client_bookmark_id,
        url=record.url,
        normalizedUrl=record.normalized_url,
        domain=record.domain,
        updatedAt=record.updated_at,
        created=created,
        urlChanged=url_changed,
        revived=revived,
        enrichmentStatus=record.enrichment_status,
        source=source,
    )


def change_event(record: Bookmark) -> Event:
    """The event of a bookmark a bulk change or its undo wrote: a save, or a delete."""
    return _bookmark_event(record)


def revived_event(record: Bookmark) -> BookmarkSaved:
    """The event of a bookmark brought back from the trash: an ordinary upsert, flagged as revived."""
    return _saved_event(record, revived=True)


def import_saved_event(record: Bookmark, *, created: bool) -> BookmarkSaved:
    """The event of a bookmark an import wrote: ``source="import"`` tells enrichment to treat it as bulk."""
    return _saved_event(record, created=created, source="import")


def _deleted_event(record: Bookmark) -> BookmarkDeleted:
    assert record.deleted_at is not None
    return BookmarkDeleted(
        userId=record.owner_uid,
        clientBookmarkId=record.client_bookmark_id,
        normalizedUrl=record.normalized_url or None,
        deletedAt=record.deleted_at,
    )


def _bookmark_event(record: Bookmark, *, created: bool = False) -> Event:
    return _deleted_event(record) if record.is_deleted else _saved_event(record, created=created)


def _collection_event(record: Collection) -> CollectionChanged:
    return CollectionChanged(
        userId=record.owner_uid,
        collectionId=record.collection_id,
        deleted=record.is_deleted,
        updatedAt=record.updated_at,
    )


def new_collection_event(record: Collection) -> CollectionChanged:
    return _collection_event(record)


async def _open(
    session: AsyncSession, owner: uuid.UUID, client_bookmark_id: str | None = None, *, take_pending: bool = False
) -> repository.StreamSlot:
    """Refuse a deleted user and take the write's stream position: one round trip (reading the bookmark
    ``client_bookmark_id`` under lock, and with ``take_pending`` its early enrichment result, in it)."""
    return _live(await repository.open_stream(session, owner, client_bookmark_id, take_pending=take_pending))


async def _read_again(session: AsyncSession, owner: uuid.UUID, client_bookmark_id: str) -> Bookmark:
    """The bookmark a write's opening statement did not see because another write of the user created it
    while this one waited for the stream (see ``repository.open_stream``): read by a new statement."""
    found = await repository.get_for_update(session, owner, client_bookmark_id)
    if found is None:  # removed for good since the create met it: only an account purge or merge does that
        raise UserGone()
    return found


def _live(slot: repository.StreamSlot | None) -> repository.StreamSlot:
    if slot is None:
        raise UserGone()
    return slot


def client_write(fields: Mapping[str, Any]) -> BookmarkWrite:
    """The validated PUT body (domain field names) with its URL normalized."""
    normalized = normalize_url(fields["url"])
    return BookmarkWrite.of({**fields, "normalized_url": normalized.url, "domain": normalized.domain})


# --- bookmarks ----------------------------------------------------------------------------------------


async def lookup_bookmark(*, sessions: SessionFactory, owner: uuid.UUID, url: str) -> BookmarkView:
    """The owner's live bookmark saved as ``url``'s normalized URL, else one whose page names it as its
    canonical URL (the newest if several); 404 when none."""
    normalized = normalize_url(url).url
    async with transaction(sessions) as session:  # one snapshot for the record and the plan
        found = await lookups.live_bookmark_by_url(session, owner, normalized)
        if found is None:
            raise BookmarkNotFound("No live bookmark of yours has this URL.")
        return BookmarkView(found, await lookups.is_pro(session, owner))


async def upsert_bookmark(
    *, sessions: SessionFactory, owner: uuid.UUID, client_bookmark_id: str, write: BookmarkWrite
) -> BookmarkView:
    """Create or merge a bookmark (present fields overwrite, absent keep; a deleted one is revived).
    Usually one statement for a new bookmark and two for an existing one, each committed on its own
    (:func:`_upsert_at_head`). Otherwise, the locked way: two statements in a transaction, opening the
    stream (user check, position, pending enrichment) reading the row under lock, then storing the record
    together with its outbox row. A create that meets a row created meanwhile
    (``repository.open_stream``) reads it and merges instead."""
    done = await _upsert_at_head(sessions, owner, client_bookmark_id, write)
    if done is not None:
        return done
    async with transaction(sessions) as session:
        slot = await _open(session, owner, client_bookmark_id, take_pending=True)
        if slot.bookmark is None:
            record, event, page = _created(slot, owner, client_bookmark_id, write)
            if await repository.put_bookmark(session, record, page, event=event, create=True):
                return BookmarkView(record, slot.is_pro)
            existing = await _read_again(session, owner, client_bookmark_id)
        else:
            existing = slot.bookmark
        merged = rules.merge_write(existing, write, slot.position)
        if merged is None:
            # A retried or redundant write: same state, no new position, nothing to sync.
            return BookmarkView(existing, slot.is_pro)
        event = _saved_event(merged, url_changed=rules.url_changed(existing, write), revived=existing.is_deleted)
        await repository.put_bookmark(session, merged, event=event)
        return BookmarkView(merged, slot.is_pro)


# A draft's position: the store's single statements put the position they take in every field holding it.
_UNPOSITIONED = datetime.fromtimestamp(0, UTC)
_FIELDS = tuple(f.name for f in fields(Bookmark))


def _positioned(draft: Bookmark) -> tuple[str, ...]:
    return tuple(name for name in _FIELDS if getattr(draft, name) is _UNPOSITIONED)


async def _upsert_at_head(
    sessions: SessionFactory, owner: uuid.UUID, client_bookmark_id: str, write: BookmarkWrite
) -> BookmarkView | None:
    """The usual PUT without a transaction: a new bookmark (with no early enrichment result waiting) is one
    statement that stores it with its event and position (``repository.create_at_head``); an existing one
    is that statement's unlocked read, the merge, and one statement that replaces the row if no other
    write changed it meanwhile (``repository.merge_at_head``). None when any of that did not apply, and
    the caller writes the locked way."""
    draft = rules.new_bookmark(owner, client_bookmark_id, write, _UNPOSITIONED)
    async with single_statements(sessions) as conn:
        head = await repository.create_at_head(conn, draft, _saved_event(draft, created=True), _positioned(draft))
        if head.position is not None:
            return BookmarkView(rules.new_bookmark(owner, client_bookmark_id, write, head.position), head.is_pro)
        if head.existing is None or not head.live:
            return None
        return await _merge_at_head(conn, head.existing, write, head.is_pro)


async def _merge_at_head(
    conn: AsyncConnection, existing: Bookmark, write: BookmarkWrite, is_pro: bool
) -> BookmarkView | None:
    draft = rules.merge_write(existing, write, _UNPOSITIONED)
    if draft is None:  # a retried or redundant write, as the locked way answers it
        return BookmarkView(existing, is_pro)
    event = _saved_event(draft, url_changed=rules.url_changed(existing, write), revived=existing.is_deleted)
    position = await repository.merge_at_head(conn, draft, event, _positioned(draft), existing.updated_at)
    if position is None:
        return None
    merged = rules.merge_write(existing, write, position)
    assert merged is not None
    return BookmarkView(merged, is_pro)


def _created(
    slot: repository.StreamSlot, owner: uuid.UUID, client_bookmark_id: str, write: BookmarkWrite
) -> tuple[Bookmark, BookmarkSaved, PageText | None]:
    """A new bookmark from ``write``, with the enrichment result that arrived before it if it applies."""
    record = rules.new_bookmark(owner, client_bookmark_id, write, slot.position)
    page: PageText | None = None
    if slot.pending is not None:
        completed = EnrichmentCompleted.model_validate(slot.pending)
        if rules.enrichment_applies(record, completed.normalizedUrl):
            record = rules.apply_enrichment(record, completed.result, completed.enrichedAt, slot.position)
            page = _page_of(completed)
    return record, _saved_event(record, created=True), page


async def delete_bookmark(*, sessions: SessionFactory, owner: uuid.UUID, client_bookmark_id: str) -> None:
    """Soft-delete; an unknown id still records a tombstone so offline create+delete replays converge."""
    async with transaction(sessions) as session:
        slot = await _open(session, owner, client_bookmark_id)
        existing = slot.bookmark
        record = rules.tombstone(existing, owner, client_bookmark_id, slot.position)
        if record is None:
            return
        if await _put_tombstone(session, record, create=existing is None):
            return
        existing = await _read_again(session, owner, client_bookmark_id)
        record = rules.tombstone(existing, owner, client_bookmark_id, slot.position)
        if record is not None:
            await _put_tombstone(session, record, create=False)


async def _put_tombstone(session: AsyncSession, record: Bookmark, *, create: bool) -> bool:
    """The tombstone and its event; the bookmark's highlights are deleted with it, in the same statement."""
    return await repository.put_bookmark(
        session,
        record,
        event=_deleted_event(record),
        create=create,
        tombstone_ctes=highlights_store.deleted_with_bookmark_ctes,
    )


async def replace_collections(
    *, sessions: SessionFactory, owner: uuid.UUID, client_bookmark_id: str, collection_ids: list[str]
) -> None:
    """Replace the bookmark's collection memberships with exactly ``collection_ids``."""
    async with transaction(sessions) as session:
        slot = await _open(session, owner, client_bookmark_id)
        existing = slot.bookmark
        if existing is None:  # or created while this write waited for the stream
            existing = await repository.get_for_update(session, owner, client_bookmark_id)
        if existing is None or existing.is_deleted:
            raise BookmarkNotFound()
        record = rules.with_collections(existing, collection_ids, slot.position)
        if record is None:
            return
        await repository.put_bookmark(session, record, event=_saved_event(record))


# --- collections --------------------------------------------------------------------------------------


async def upsert_collection(
    *, sessions: SessionFactory, owner: uuid.UUID, collection_id: str, write: CollectionWrite
) -> Collection:
    """Create, revive, rename or move a collection (docs/api-guide.md, section 11); idempotent."""
    async with transaction(sessions) as session:
        position = (await _open(session, owner)).position
        existing = await repository.get_collection_for_update(session, owner, collection_id)
        live = await repository.live_collection_parents(session, owner)
        try:
            record = collection_rules.write_collection(
                existing, live, owner=owner, collection_id=collection_id, write=write, position=position
            )
        except NestingError as exc:
            raise InvalidCollection(str(exc)) from exc
        if record is None:
            assert existing is not None
            return existing
        await repository.put_collection_with_event(session, record, _collection_event(record))
        return record


async def delete_collection(*, sessions: SessionFactory, owner: uuid.UUID, collection_id: str) -> None:
    """Tombstone the collection, move its children up to its parent and remove its id from every
    bookmark; all of it commits together, each changed record at a new position of the stream."""
    async with transaction(sessions) as session:
        position = (await _open(session, owner)).position
        existing = await repository.get_collection_for_update(session, owner, collection_id)
        record = collection_rules.delete_collection(existing, owner, collection_id, position)
        if record is None:
            return
        await repository.put_collection(session, record)
        events: list[Event] = [_collection_event(record)]
        children = await repository.children_of(session, owner, collection_id)
        members = await repository.in_collection(session, owner, collection_id)
        live_members = [b for b in members if not b.is_deleted]
        positions = iter(await _positions(session, owner, len(children) + len(live_members)))
        for child in children:
            moved = collection_rules.reparented(child, record.parent_id, next(positions))
            await repository.put_collection(session, moved)
            events.append(_collection_event(moved))
        for member in members:
            # Live bookmarks get new positions; tombstones keep theirs (they show no collections).
            at = member.updated_at if member.is_deleted else next(positions)
            stripped = rules.without_collection(member, collection_id, at)
            if stripped is not None:
                await repository.put_bookmark(session, stripped)
                if not member.is_deleted:
                    events.append(_saved_event(stripped))
        await add_events(session, events)


# --- applying events from other services -------------------------------------------------------------


async def apply_enrichment_completed(session: AsyncSession, event: EnrichmentCompleted) -> None:
    """Write enrichment output onto the bookmark (or keep it until the bookmark exists)."""
    owner = event.userId
    if await repository.is_user_deleted(session, owner):
        return
    position, _ = await repository.allocate_positions(session, owner)
    existing = await repository.get_for_update(session, owner, event.clientBookmarkId)
    if existing is None:
        await repository.save_pending_enrichment(
            session, owner, event.clientBookmarkId, event.normalizedUrl, event.model_dump(mode="json")
        )
        return
    if not rules.enrichment_applies(existing, event.normalizedUrl):
        return  # deleted, or the URL changed since: this result describes another page
    record = rules.apply_enrichment(existing, event.result, event.enrichedAt, position)
    # The page text searchable in this commit, the record's event with it.
    await repository.put_bookmark(session, record, _page_of(event), event=_saved_event(record))
    await highlights_service.store_page_text(session, owner, event.clientBookmarkId, event.result.text)


def _page_of(event: EnrichmentCompleted) -> PageText:
    """The start of the readable text, which search indexes (its whole is what highlights anchor in)."""
    return PageText(text=page_text_excerpt(event.result.text, SEARCH_TEXT_MAX_BYTES), language=event.result.language)


async def apply_enrichment_failed(session: AsyncSession, event: EnrichmentFailed) -> None:
    owner = event.userId
    if await repository.is_user_deleted(session, owner):
        return
    position, _ = await repository.allocate_positions(session, owner)
    existing = await repository.get_for_update(session, owner, event.clientBookmarkId)
    if existing is None or not rules.enrichment_applies(existing, event.normalizedUrl):
        return
    record = rules.apply_enrichment_failure(existing, event.status, event.errorCode, position)
    if record is None:
        return  # a late failure report must not undo a result
    await repository.put_bookmark(session, record, event=_saved_event(record))


async def apply_link_checked(session: AsyncSession, event: LinkChecked) -> None:
    """Write a link check's result onto the bookmark (docs/api-guide.md, section 15); an older report than
    the one applied, or one about a URL the bookmark no longer has, changes nothing."""
    owner = event.userId
    if await repository.is_user_deleted(session, owner):
        return
    position, _ = await repository.allocate_positions(session, owner)
    existing = await repository.get_for_update(session, owner, event.clientBookmarkId)
    if existing is None or not rules.link_check_applies(existing, event.normalizedUrl, event.checkedAt):
        return
    record = rules.apply_link_check(
        existing, rules.LinkStatus(event.linkStatus), event.checkedAt, event.movedTo, position
    )
    await repository.put_bookmark(session, record, event=_saved_event(record))


async def apply_plan_change(session: AsyncSession, owner: uuid.UUID, is_pro: bool) -> None:
    """Pro gates ``saveWhy``: when the plan flips, re-stream the bookmarks whose visible saveWhy changed."""
    if not await repository.set_pro(session, owner, is_pro):
        return
    affected = await repository.with_save_why(session, owner)
    if not affected:
        return
    first, _ = await repository.allocate_positions(session, owner, len(affected))
    records = [rules.with_position(b, first + i * _MICRO) for i, b in enumerate(affected)]
    await repository.put_bookmarks(session, records)
    await add_events(session, [_saved_event(r) for r in records])


async def purge_user(session: AsyncSession, owner: uuid.UUID) -> None:
    await repository.purge_user(session, owner)
    await highlights_store.purge_user(session, owner)
    await imports_store.purge_user(session, owner)


async def merge_users(session: AsyncSession, *, source: uuid.UUID, target: uuid.UUID) -> None:
    """Move the source's bookmarks and collections into the target (later ``updatedAt`` wins per id),
    then purge the source. Winners get fresh positions in the target's stream so the target's other
    devices receive them."""
    if source == target:
        return
    if not await repository.is_user_deleted(session, target):
        events = await _move_bookmarks(session, source, target)
        events += await _move_collections(session, source, target)
        moved = [e.clientBookmarkId for e in events if isinstance(e, BookmarkSaved)]
        events += await highlights_service.move_user(session, source, target, moved)
        await repository.merge_search_configs(session, source, target)
        await add_events(session, events)
    await purge_user(session, source)


async def _positions(session: AsyncSession, owner: uuid.UUID, count: int) -> Sequence[datetime]:
    if count == 0:
        return []
    first, _ = await repository.allocate_positions(session, owner, count)
    return [first + i * _MICRO for i in range(count)]


async def _move_bookmarks(session: AsyncSession, source: uuid.UUID, target: uuid.UUID) -> list[Event]:
    winners = [
        b
        for b in await repository.all_for_owner(session, source)
        if rules.incoming_wins(await repository.get_for_update(session, target, b.client_bookmark_id), b)
    ]
    events: list[Event] = []
    for record, position in zip(winners, await _positions(session, target, len(winners)), strict=True):
        moved = rules.moved_to(record, target, position)
        await repository.put_bookmark(session, moved)
        await repository.copy_search_page(session, source, target, moved.client_bookmark_id)
        events.append(_bookmark_event(moved, created=True))
    return events


async def _move_collections(session: AsyncSession, source: uuid.UUID, target: uuid.UUID) -> list[Event]:
    winners = [
        c
        for c in await repository.all_collections_for_owner(session, source)
        if collection_rules.incoming_wins(
            await repository.get_collection_for_update(session, target, c.collection_id), c
        )
    ]
    events: list[Event] = []
    for record, position in zip(winners, await _positions(session, target, len(winners)), strict=True):
        moved = collection_rules.moved_to(record, target, position)
        await repository.put_collection(session, moved)
        events.append(_collection_event(moved))
    return events


# --- anti-entropy: what a projection of the bookmarks' URLs compares itself with (common.anti_entropy) --


async def url_digests(*, sessions: SessionFactory, after: uuid.UUID | None, limit: int) -> anti_entropy.DigestPage:
    """Digests of the live bookmarks of up to ``limit`` users after ``after``, from one snapshot."""
    async with transaction(sessions) as session:
        owners = await digests.user_page(session, after=after, limit=limit)
        found = await digests.digests(session, owners)
    users = [anti_entropy.UserDigest(userId=owner, buckets=buckets) for owner, buckets in found.items()]
    return anti_entropy.DigestPage(users=users, more=len(owners) == limit)


async def url_records(
    *, sessions: SessionFactory, owner: uuid.UUID, buckets: Sequence[int], settle_seconds: float
) -> anti_entropy.RecordHashes:
    """Per-id hashes of the owner's live bookmarks in ``buckets``, and the ids changed within
    ``settle_seconds`` (their events may not have reached the projection yet)."""
    since = datetime.now(UTC) - timedelta(seconds=settle_seconds)
    async with transaction(sessions) as session:
        hashes = await digests.record_hashes(session, owner, buckets)
        unsettled = await digests.changed_since(session, owner, buckets, since) if settle_seconds else []
    return anti_entropy.RecordHashes(hashes=hashes, unsettled=unsettled)


async def republish_urls(*, sessions: SessionFactory, owner: uuid.UUID, ids: Sequence[str]) -> int:
    """Write the current state of ``ids`` to the outbox again as new events, in one transaction: a live
    bookmark as ``bookmark.saved``, a tombstone or an unknown id as ``bookmark.deleted``. Nothing else is
    changed. A deleted user gets none (their data is gone everywhere)."""
    async with transaction(sessions) as session:
        if await repository.is_user_deleted(session, owner):
            return 0
        found = {record.client_bookmark_id: record for record in await digests.by_ids(session, owner, ids)}
        now = datetime.now(UTC)
        events = [_republished_event(found[i]) if i in found else _absent_event(owner, i, now) for i in ids]
        await add_events(session, events)
    return len(events)


def _republished_event(record: Bookmark) -> Event:
    """The record's current state at its own position. ``revived=None`` ("does not say") makes a
    projection that skips saves which cannot change URL or liveness apply it all the same."""
    if record.is_deleted:
        return _deleted_event(record)
    return _saved_event(record).model_copy(update={"revived": None})


def _absent_event(owner: uuid.UUID, client_bookmark_id: str, now: datetime) -> BookmarkDeleted:
    """A bookmark this service never had (or lost with a merged account): deleted, as of now."""
    return BookmarkDeleted(userId=owner, clientBookmarkId=client_bookmark_id, normalizedUrl=None, deletedAt=now)
