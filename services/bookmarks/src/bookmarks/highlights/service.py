"""Highlight use cases (docs/api-guide.md, section 16): the API's writes, and what other writes of the
library do to highlights (their bookmark deleted, restored or merged, its readable text replaced).

Every write opens the user's stream first (its row lock orders all of them); highlights that follow a
bookmark are changed set-based by one statement (``store.follow_bookmarks``) in the bookmark's own
transaction and travel with the bookmark's event.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks.domain.errors import InvalidHighlight, UserGone
from bookmarks.highlights import rules, store
from bookmarks.highlights.anchoring import anchor, anchor_all
from bookmarks.highlights.rules import Highlight, HighlightError, HighlightWrite
from bookmarks.store import repository
from bookmarks.store.tables import page_texts
from common.db import SessionFactory, transaction
from common.events import Event, HighlightChanged
from common.outbox import add_events

__all__ = ["delete_highlight", "highlight_event", "put_highlight", "store_page_text"]


def highlight_event(record: Highlight) -> HighlightChanged:
    return HighlightChanged(
        userId=record.owner_uid,
        highlightId=record.highlight_id,
        deleted=record.is_deleted,
        updatedAt=record.updated_at,
    )


async def _page_text(session: AsyncSession, owner: uuid.UUID, client_bookmark_id: str) -> str | None:
    statement = select(page_texts.c.text).where(
        page_texts.c.owner_uid == owner, page_texts.c.client_bookmark_id == client_bookmark_id
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def put_highlight(
    *, sessions: SessionFactory, owner: uuid.UUID, highlight_id: str, write: HighlightWrite
) -> Highlight:
    """Create, revive or merge a highlight; idempotent. A new one is anchored at once when the page's
    readable text is known."""
    async with transaction(sessions) as session:
        slot = await repository.open_stream(session, owner)
        if slot is None:
            raise UserGone()
        bookmark = await repository.get_for_update(session, owner, write.bookmark_id)
        if bookmark is None or bookmark.is_deleted:
            raise InvalidHighlight("bookmarkId must name a live bookmark of yours (PUT the bookmark first).")
        existing = await store.get_for_update(session, owner, highlight_id)
        try:
            if existing is None or existing.is_deleted:
                on_bookmark, of_user = await store.live_counts(session, owner, write.bookmark_id)
                rules.check_counts(on_bookmark=on_bookmark, of_user=of_user)
            record = rules.write_highlight(
                existing, write, owner=owner, highlight_id=highlight_id, position=slot.position
            )
        except HighlightError as exc:
            raise InvalidHighlight(str(exc)) from exc
        if record is None:
            assert existing is not None
            return existing
        if record.anchor is None and (text := await _page_text(session, owner, write.bookmark_id)) is not None:
            record = rules.anchored(record, anchor(text, record.selector), slot.position) or record
        await store.put(session, [record])
        if existing is None or existing.is_deleted or existing.note != record.note:  # what search indexes
            await store.reindex_records(session, owner, [bookmark])
        await add_events(session, [highlight_event(record)])
        return record


async def delete_highlight(*, sessions: SessionFactory, owner: uuid.UUID, highlight_id: str) -> None:
    """Tombstone (idempotent)."""
    async with transaction(sessions) as session:
        slot = await repository.open_stream(session, owner)
        if slot is None:
            raise UserGone()
        existing = await store.get_for_update(session, owner, highlight_id)
        record = rules.delete_highlight(existing, owner, highlight_id, slot.position)
        if record is None:
            return
        await store.put(session, [record])
        if existing is not None and not existing.is_deleted:
            await store.reindex(session, owner, [record.client_bookmark_id])
        if record.updated_at == slot.position:  # a new tombstone, not only a restore forgotten
            await add_events(session, [highlight_event(record)])


async def move_user(
    session: AsyncSession, source: uuid.UUID, target: uuid.UUID, moved_bookmarks: Sequence[str]
) -> list[Event]:
    """An account merge: the source's highlights join the target's (the later ``updatedAt`` wins per id),
    each at a new position of the target's stream, and the moved bookmarks' readable text follows them."""
    await store.copy_page_texts(session, source, target, moved_bookmarks)
    winners = [h for h in await store.owned_by(session, source) if rules.incoming_wins(
        await store.get_for_update(session, target, h.highlight_id), h)]  # fmt: skip
    if not winners:
        return []
    first, _ = await repository.allocate_positions(session, target, len(winners))
    moved = [rules.moved_to_user(h, target, first + i * repository.ONE_MICROSECOND) for i, h in enumerate(winners)]
    await store.put(session, moved)
    await store.reindex(session, target, sorted({*moved_bookmarks, *(h.client_bookmark_id for h in moved)}))
    return [highlight_event(h) for h in moved]


async def store_page_text(session: AsyncSession, owner: uuid.UUID, client_bookmark_id: str, text: str | None) -> None:
    """Keep the bookmark's new readable text and re-anchor its live highlights in it, in the transaction
    that stores the text; each highlight that moved gets a new stream position."""
    if text is None:
        return
    statement = insert(page_texts).values(owner_uid=owner, client_bookmark_id=client_bookmark_id, text=text)
    await session.execute(statement.on_conflict_do_update(index_elements=["owner_uid", "client_bookmark_id"],
                                                           set_={"text": statement.excluded.text}))  # fmt: skip
    live = await store.live_on(session, owner, [client_bookmark_id])
    if not live:
        return
    await store.reindex(session, owner, [client_bookmark_id])  # in the page's language
    found = anchor_all(text, [h.selector for h in live])
    moved = [m for h, a in zip(live, found, strict=True) if (m := rules.anchored(h, a, h.updated_at)) is not None]
    if not moved:
        return
    first, _ = await repository.allocate_positions(session, owner, len(moved))
    await store.put(session, [rules.at(m, first + i * repository.ONE_MICROSECOND) for i, m in enumerate(moved)])
