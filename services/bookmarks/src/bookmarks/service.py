"""Bookmark use cases: each is one transaction that changes state and writes its events together."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import RowMapping
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.cursor import StreamPosition, decode_cursor, encode_cursor
from bookmarks.domain.errors import BookmarkNotFound, UserGone
from bookmarks.domain.model import CLIENT_FIELDS, ENRICHMENT_RESET, dedupe, to_api, to_tombstone
from bookmarks.store import queries, repository
from common.db import SessionFactory
from common.events import (
    BookmarkDeleted,
    BookmarkSaved,
    EnrichmentCompleted,
    EnrichmentFailed,
    Event,
)
from common.outbox import add_events
from common.urls import normalize_url


@dataclass(frozen=True, slots=True)
class DeltaPage:
    cursor: str | None
    next_cursor: str | None
    upserts: list[dict[str, Any]]
    tombstones: list[dict[str, Any]]


def _saved_event(row: RowMapping, *, created: bool = False, url_changed: bool = False) -> BookmarkSaved:
    return BookmarkSaved(
        userId=row["owner_uid"],
        clientBookmarkId=row["client_bookmark_id"],
        url=row["url"],
        normalizedUrl=row["normalized_url"],
        domain=row["domain"],
        updatedAt=row["updated_at"],
        created=created,
        urlChanged=url_changed,
        enrichmentStatus=row["enrichment_status"],
    )


async def _guard_user(session: AsyncSession, owner: uuid.UUID) -> None:
    if await repository.is_user_deleted(session, owner):
        raise UserGone()


async def upsert_bookmark(
    *, sessions: SessionFactory, owner: uuid.UUID, client_bookmark_id: str, fields: dict[str, Any]
) -> dict[str, Any]:
    """Create or merge a bookmark (present fields overwrite, absent keep; a deleted one is revived)."""
    changes: dict[str, Any] = {CLIENT_FIELDS[k]: v for k, v in fields.items() if k in CLIENT_FIELDS}
    if "collection_ids" in changes:
        changes["collection_ids"] = dedupe(changes["collection_ids"] or [])
    if "is_favorite" in changes and changes["is_favorite"] is None:
        changes["is_favorite"] = False
    normalized = normalize_url(changes["url"])
    changes["normalized_url"], changes["domain"] = normalized.url, normalized.domain

    async with sessions() as session, session.begin():
        await _guard_user(session, owner)
        position, is_pro = await repository.allocate_positions(session, owner)
        existing = await repository.get_for_update(session, owner, client_bookmark_id)
        events: list[Event] = []
        if existing is None:
            values = {
                "owner_uid": owner,
                "client_bookmark_id": client_bookmark_id,
                "tags": [],
                "collection_ids": [],
                "is_favorite": False,
                **changes,
                "created_at": position,
                "updated_at": position,
            }
            row = await repository.insert_bookmark(session, values)
            pending = await repository.take_pending_enrichment(session, owner, client_bookmark_id)
            if pending is not None and pending.get("normalizedUrl") == row["normalized_url"]:
                row = await _apply_enrichment_event(session, row, pending, position)
            events.append(_saved_event(row, created=True))
        else:
            url_changed = existing["normalized_url"] != changes["normalized_url"]
            if url_changed:
                changes = {**ENRICHMENT_RESET, **changes}
            if existing["deleted_at"] is None and all(existing[c] == v for c, v in changes.items()):
                # A retried or redundant write: same state, no new position, nothing to sync.
                return to_api(existing, is_pro=is_pro)
            changes.update(updated_at=position, deleted_at=None)
            row = await repository.update_bookmark(session, owner, client_bookmark_id, changes)
            events.append(_saved_event(row, url_changed=url_changed))
        await add_events(session, events)
        return to_api(row, is_pro=is_pro)


async def delete_bookmark(*, sessions: SessionFactory, owner: uuid.UUID, client_bookmark_id: str) -> None:
    """Soft-delete; an unknown id still records a tombstone so offline create+delete replays converge."""
    async with sessions() as session, session.begin():
        await _guard_user(session, owner)
        position, _ = await repository.allocate_positions(session, owner)
        existing = await repository.get_for_update(session, owner, client_bookmark_id)
        if existing is not None and existing["deleted_at"] is not None:
            return
        if existing is None:
            row = await repository.insert_bookmark(
                session,
                {
                    "owner_uid": owner,
                    "client_bookmark_id": client_bookmark_id,
                    "url": "",
                    "normalized_url": "",
                    "domain": "",
                    "tags": [],
                    "collection_ids": [],
                    "is_favorite": False,
                    "created_at": position,
                    "updated_at": position,
                    "deleted_at": position,
                },
            )
        else:
            row = await repository.update_bookmark(
                session, owner, client_bookmark_id, {"updated_at": position, "deleted_at": position}
            )
        await add_events(
            session,
            [
                BookmarkDeleted(
                    userId=owner,
                    clientBookmarkId=client_bookmark_id,
                    normalizedUrl=row["normalized_url"] or None,
                    deletedAt=position,
                )
            ],
        )


async def replace_collections(
    *, sessions: SessionFactory, owner: uuid.UUID, client_bookmark_id: str, collection_ids: list[str]
) -> None:
    """Replace the bookmark's collection memberships with exactly ``collection_ids``."""
    wanted = dedupe(collection_ids)
    async with sessions() as session, session.begin():
        await _guard_user(session, owner)
        position, _ = await repository.allocate_positions(session, owner)
        existing = await repository.get_for_update(session, owner, client_bookmark_id)
        if existing is None or existing["deleted_at"] is not None:
            raise BookmarkNotFound()
        if list(existing["collection_ids"]) == wanted:
            return
        row = await repository.update_bookmark(
            session, owner, client_bookmark_id, {"collection_ids": wanted, "updated_at": position}
        )
        await add_events(session, [_saved_event(row)])


async def read_delta(
    *, sessions: SessionFactory, owner: uuid.UUID, cursor: str | None, limit: int, cursor_secret: str
) -> DeltaPage:
    """One page of the user's stream strictly after ``cursor``; ``next_cursor`` is None at the end."""
    after: StreamPosition | None = None
    if cursor:
        after = decode_cursor(cursor, owner=owner, secret=cursor_secret)
    async with sessions() as session:
        # One extra row tells whether more follow.
        rows = await queries.delta_page(session, owner, after, limit + 1)
        if not rows:
            # A deleted user's stream is purged, so only an empty page needs the (rare) check.
            await _guard_user(session, owner)
    is_pro = bool(rows[0]["owner_is_pro"]) if rows else False
    more = len(rows) > limit
    rows = rows[:limit]
    upserts: list[dict[str, Any]] = []
    tombstones: list[dict[str, Any]] = []
    for row in rows:
        if row["deleted_at"] is not None:
            tombstones.append(to_tombstone(row))
        else:
            upserts.append(to_api(row, is_pro=is_pro))
    next_cursor = None
    if more and rows:
        last = rows[-1]
        next_cursor = encode_cursor(
            StreamPosition(last["updated_at"], last["client_bookmark_id"]), owner=owner, secret=cursor_secret
        )
    return DeltaPage(cursor=cursor or None, next_cursor=next_cursor, upserts=upserts, tombstones=tombstones)


# --- applying events from other services -------------------------------------------------------------


async def _apply_enrichment_event(
    session: AsyncSession, row: RowMapping, event: dict[str, Any], position: datetime
) -> RowMapping:
    completed = EnrichmentCompleted.model_validate(event)
    result = completed.result
    changes: dict[str, Any] = {
        "summary": result.summary,
        "save_why": result.saveWhy,
        "tags": list(result.tags),
        "enrichment_status": "completed",
        "snapshot_status": result.snapshotStatus,
        "last_error_code": None,
        "enriched_at": completed.enrichedAt,
        "updated_at": position,
    }
    # Server-authoritative, but a page without a description must not erase what the user typed.
    for column, value in (
        ("title", result.title),
        ("description", result.description),
        ("thumbnail_url", result.thumbnailUrl),
    ):
        if value:
            changes[column] = value
    return await repository.update_bookmark(session, row["owner_uid"], row["client_bookmark_id"], changes)


async def apply_enrichment_completed(session: AsyncSession, event: EnrichmentCompleted) -> None:
    """Write enrichment output onto the bookmark (or keep it until the bookmark exists)."""
    owner = event.userId
    if await repository.is_user_deleted(session, owner):
        return
    position, _ = await repository.allocate_positions(session, owner)
    row = await repository.get_for_update(session, owner, event.clientBookmarkId)
    if row is None:
        await repository.save_pending_enrichment(
            session, owner, event.clientBookmarkId, event.normalizedUrl, event.model_dump_json()
        )
        return
    if row["deleted_at"] is not None or row["normalized_url"] != event.normalizedUrl:
        return  # deleted, or the URL changed since: this result describes another page
    updated = await _apply_enrichment_event(session, row, event.model_dump(mode="json"), position)
    await add_events(session, [_saved_event(updated)])


async def apply_enrichment_failed(session: AsyncSession, event: EnrichmentFailed) -> None:
    owner = event.userId
    if await repository.is_user_deleted(session, owner):
        return
    position, _ = await repository.allocate_positions(session, owner)
    row = await repository.get_for_update(session, owner, event.clientBookmarkId)
    if row is None or row["deleted_at"] is not None or row["normalized_url"] != event.normalizedUrl:
        return
    if row["enrichment_status"] == "completed":
        return  # a late failure report must not undo a result
    changes: dict[str, Any] = {
        "enrichment_status": event.status,
        "last_error_code": event.errorCode,
        "updated_at": position,
    }
    if event.status == "failed" and row["snapshot_status"] in ("pending", "processing"):
        changes["snapshot_status"] = "failed"  # final: no snapshot will be taken (decisions.md §6.7)
    updated = await repository.update_bookmark(session, owner, event.clientBookmarkId, changes)
    await add_events(session, [_saved_event(updated)])


async def apply_plan_change(session: AsyncSession, owner: uuid.UUID, is_pro: bool) -> None:
    """Pro gates ``saveWhy``: when the plan flips, re-stream the bookmarks whose visible saveWhy changed."""
    if not await repository.set_pro(session, owner, is_pro):
        return
    ids = await repository.ids_with_save_why(session, owner)
    if not ids:
        return
    first, _ = await repository.allocate_positions(session, owner, len(ids))
    events: list[Event] = []
    for i, client_bookmark_id in enumerate(ids):
        row = await repository.update_bookmark(
            session, owner, client_bookmark_id, {"updated_at": first + i * _MICRO}
        )
        events.append(_saved_event(row))
    await add_events(session, events)


async def purge_user(session: AsyncSession, owner: uuid.UUID) -> None:
    await repository.purge_user(session, owner)


async def merge_users(session: AsyncSession, *, source: uuid.UUID, target: uuid.UUID) -> None:
    """Move the source's bookmarks into the target (later ``updatedAt`` wins per id), then purge source.

    Winners get fresh positions in the target's stream so the target's other devices receive them.
    """
    if source == target:
        return
    incoming = await repository.all_for_owner(session, source)
    winners: list[RowMapping] = []
    if incoming and not await repository.is_user_deleted(session, target):
        first, _ = await repository.allocate_positions(session, target, len(incoming))
        for row in incoming:
            existing = await repository.get_for_update(session, target, row["client_bookmark_id"])
            if existing is not None and existing["updated_at"] >= row["updated_at"]:
                continue
            winners.append(row)
        events: list[Event] = []
        for i, row in enumerate(winners):
            position = first + i * _MICRO
            values = {k: row[k] for k in row.keys()}  # noqa: SIM118 - RowMapping has no copy()
            values.update(owner_uid=target, updated_at=position)
            if values["deleted_at"] is not None:
                values["deleted_at"] = position
            await repository.delete_one(session, target, row["client_bookmark_id"])
            merged = await repository.insert_bookmark(session, values)
            if merged["deleted_at"] is not None:
                events.append(
                    BookmarkDeleted(
                        userId=target,
                        clientBookmarkId=merged["client_bookmark_id"],
                        normalizedUrl=merged["normalized_url"] or None,
                        deletedAt=position,
                    )
                )
            else:
                events.append(_saved_event(merged, created=True))
        await add_events(session, events)
    await repository.purge_user(session, source)


_MICRO = repository.ONE_MICROSECOND
