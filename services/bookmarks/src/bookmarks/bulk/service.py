"""Bulk changes and their undo (docs/api-guide.md, section 14): one transaction each.

The stream row is locked first, as by every write, then the bookmarks; every changed bookmark gets its
own position and event, so devices see ordinary upserts and tombstones (the relay's nudges coalesce).
The undo token is random; only its SHA-256 is stored, with the changes, for an hour.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks import service as bookmarks_service
from bookmarks.bulk import store
from bookmarks.bulk.rules import DELETED, BulkArgs, Change, apply, undo
from bookmarks.domain.errors import UserGone
from bookmarks.domain.model import Bookmark
from bookmarks.highlights import store as highlights_store
from bookmarks.search.query import parse_query
from bookmarks.store import repository
from common.db import SessionFactory, transaction
from common.errors import InvalidRequest
from common.outbox import add_events

__all__ = ["MAX_IDS", "MAX_MATCHES", "UNDO_WINDOW", "BulkDone", "UndoDone", "bulk_change", "undo_bulk"]

MAX_IDS: Final = 1000
MAX_MATCHES: Final = 10_000
UNDO_WINDOW: Final = timedelta(hours=1)
_ANY_TIME: Final = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class BulkDone:
    affected: int
    undo_token: str


@dataclass(frozen=True, slots=True)
class UndoDone:
    restored: int
    skipped: int


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def bulk_change(
    *, sessions: SessionFactory, owner: uuid.UUID, args: BulkArgs, ids: Sequence[str] | None, query: str | None
) -> BulkDone:
    parsed = parse_query(query) if query is not None else None  # 400 before anything is read
    token = secrets.token_urlsafe(32)
    async with transaction(sessions) as session:
        if await repository.open_stream(session, owner) is None:
            raise UserGone()
        if parsed is not None:
            found = await store.live_by_query(session, owner, parsed, limit=MAX_MATCHES + 1)
            if len(found) > MAX_MATCHES:
                raise InvalidRequest(f"The query matches more than {MAX_MATCHES:,} bookmarks; narrow it down.")
        else:
            found = await store.live_by_ids(session, owner, ids or ())
        changed = await _write(session, owner, found, args)
        await store.save_operation(
            session,
            token_hash=_hash(token),
            owner=owner,
            expires_at=datetime.now(UTC) + UNDO_WINDOW,
            changes=[change.to_json() for change in changed],
        )
    return BulkDone(len(changed), token)


async def _write(session: AsyncSession, owner: uuid.UUID, found: list[Bookmark], args: BulkArgs) -> list[Change]:
    try:
        touched = [record for record in found if apply(record, args, _ANY_TIME) is not None]
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None
    if not touched:
        return []
    first, _ = await repository.allocate_positions(session, owner, len(touched))
    results = [apply(r, args, first + i * repository.ONE_MICROSECOND) for i, r in enumerate(touched)]
    records = [result[0] for result in results if result is not None]
    await repository.update_bookmarks(session, records)
    await highlights_store.follow_bookmarks(session, owner, [r.client_bookmark_id for r in records])
    await add_events(session, [bookmarks_service.change_event(record) for record in records])
    return [result[1] for result in results if result is not None]


async def undo_bulk(*, sessions: SessionFactory, owner: uuid.UUID, undo_token: str) -> UndoDone:
    async with transaction(sessions) as session:
        if await repository.open_stream(session, owner) is None:
            raise UserGone()
        saved = await store.take_operation(session, token_hash=_hash(undo_token), owner=owner, now=datetime.now(UTC))
        if saved is None:
            raise InvalidRequest("This undo token is unknown, expired, already used or not yours.")
        changes = [Change.from_json(item) for item in saved]
        current = await store.all_by_ids(session, owner, [c.client_bookmark_id for c in changes])
        back = [c for c in changes if undo(current.get(c.client_bookmark_id), c, _ANY_TIME) is not None]
        if back:
            first, _ = await repository.allocate_positions(session, owner, len(back))
            records = [
                undo(current.get(c.client_bookmark_id), c, first + i * repository.ONE_MICROSECOND)
                for i, c in enumerate(back)
            ]
            restored = [r for r in records if r is not None]
            await repository.update_bookmarks(session, restored)
            await highlights_store.follow_bookmarks(session, owner, [r.client_bookmark_id for r in restored])
            events = [
                bookmarks_service.revived_event(r) if c.field == DELETED else bookmarks_service.change_event(r)
                for r, c in zip(restored, back, strict=True)
            ]
            await add_events(session, events)
    return UndoDone(restored=len(back), skipped=len(changes) - len(back))
