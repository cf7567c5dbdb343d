"""The delta use case: one page of a user's stream after a cursor, and the cursor of the next."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from bookmarks.domain.cursor import StreamPosition, decode_cursor, encode_cursor
from bookmarks.domain.errors import UserGone
from bookmarks.store import repository
from bookmarks.sync import queries
from bookmarks.sync.queries import DeltaDocuments, DeltaSlice
from common.db import SessionFactory


@dataclass(frozen=True, slots=True)
class DeltaPage:
    cursor: str | None
    next_cursor: str | None
    records: DeltaSlice


async def read_delta(
    *,
    sessions: SessionFactory,
    owner: uuid.UUID,
    cursor: str | None,
    limit: int,
    cursor_secret: str,
    documents: DeltaDocuments,
) -> DeltaPage:
    """One page of the user's stream strictly after ``cursor``; ``next_cursor`` is None at the end."""
    after: StreamPosition | None = None
    if cursor:
        after = decode_cursor(cursor, owner=owner, secret=cursor_secret)
    async with sessions() as session:
        page = await queries.delta_page(session, owner, after, limit, documents)
        if not page.count and await repository.is_user_deleted(session, owner):
            # A deleted user's stream is purged, so only an empty page needs the (rare) check.
            raise UserGone()
    next_cursor = None
    if page.more and page.last is not None:
        next_cursor = encode_cursor(page.last, owner=owner, secret=cursor_secret)
    return DeltaPage(cursor=cursor or None, next_cursor=next_cursor, records=page)
