"""The bookmark-URL projection applied a fetched batch at a time equals it applied event by event."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from enrichment_support import Api

from common.events import BookmarkDeleted, BookmarkSaved
from enrichment import service

T0 = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def save(user: uuid.UUID, bookmark: str, url: str, minutes: int, **extra: Any) -> BookmarkSaved:
    return BookmarkSaved(
        userId=user,
        clientBookmarkId=bookmark,
        url=url,
        normalizedUrl=url,
        domain="e.example",
        updatedAt=T0 + timedelta(minutes=minutes),
        **extra,
    )


def history(user: uuid.UUID) -> list[BookmarkSaved]:
    """Two bookmarks; b1 changes URL, and a stale change of b1 arrives after a newer one."""
    return [
        save(user, "b1", "https://e.example/1", 1),
        save(user, "b2", "https://e.example/2", 2),
        save(user, "b1", "https://e.example/3", 4),
        save(user, "b1", "https://e.example/stale", 3),
        save(user, "b2", "https://e.example/2b", 5),
    ]


async def projection(api: Api, user: uuid.UUID) -> list[tuple[str, str, bool, datetime]]:
    rows = await api.db.rows(
        "SELECT client_bookmark_id, normalized_url, deleted, position FROM bookmark_urls WHERE user_id = :u "
        "ORDER BY client_bookmark_id",
        u=user,
    )
    return [(r["client_bookmark_id"], r["normalized_url"], r["deleted"], r["position"]) for r in rows]


async def test_a_batch_gives_the_projection_that_event_by_event_gives(api: Api) -> None:
    one_by_one, batched, gone = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    await api.db.execute("INSERT INTO users (user_id, deleted) VALUES (:u, true)", u=gone)
    async with api.db.sessions() as session, session.begin():
        for event in history(one_by_one):
            await service.apply_bookmark_saved(session, event)
        await service.apply_bookmarks_saved(session, [*history(batched), *history(gone)])

    expected = [
        ("b1", "https://e.example/3", False, T0 + timedelta(minutes=4)),
        ("b2", "https://e.example/2b", False, T0 + timedelta(minutes=5)),
    ]
    assert await projection(api, one_by_one) == expected
    assert await projection(api, batched) == expected
    assert await projection(api, gone) == []  # a deleted user's late events resurrect nothing


async def test_a_batch_of_deletes_gives_the_projection_that_event_by_event_gives(api: Api) -> None:
    one_by_one, batched, gone = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    await api.db.execute("INSERT INTO users (user_id, deleted) VALUES (:u, true)", u=gone)

    def deletes(user: uuid.UUID) -> list[BookmarkDeleted]:
        return [
            BookmarkDeleted(userId=user, clientBookmarkId="b1", normalizedUrl="", deletedAt=T0 + timedelta(minutes=6)),
            BookmarkDeleted(
                userId=user,
                clientBookmarkId="b2",
                normalizedUrl="https://e.example/2b",
                deletedAt=T0 + timedelta(minutes=1),
            ),
        ]  # older than b2's last save: no effect

    async with api.db.sessions() as session, session.begin():
        for event in history(one_by_one):
            await service.apply_bookmark_saved(session, event)
        for event in deletes(one_by_one):
            await service.apply_bookmark_deleted(session, event)
        await service.apply_bookmarks_saved(session, history(batched))
        await service.apply_bookmarks_deleted(session, [*deletes(batched), *deletes(gone)])

    expected = [
        ("b1", "https://e.example/3", True, T0 + timedelta(minutes=6)),  # an empty URL keeps the known one
        ("b2", "https://e.example/2b", False, T0 + timedelta(minutes=5)),
    ]
    assert await projection(api, one_by_one) == expected
    assert await projection(api, batched) == expected
    assert await projection(api, gone) == []


async def test_a_batch_holding_an_import_creation_projects_every_event(api: Api) -> None:
    """Imported creations also look up the cache and may queue work (test_imported_bookmarks.py); the
    batch's projection is the same as for any other batch."""
    user = uuid.uuid4()
    events = [
        save(user, "i1", "https://e.example/imp", 1, source="import", created=True),
        save(user, "i2", "https://e.example/other", 2),
    ]
    async with api.db.sessions() as session, session.begin():
        await service.apply_bookmarks_saved(session, events)
    assert [row[:2] for row in await projection(api, user)] == [
        ("i1", "https://e.example/imp"),
        ("i2", "https://e.example/other"),
    ]
    assert (
        await api.db.rows("SELECT 1 FROM bookmark_enrichments WHERE user_id = :u AND client_bookmark_id = 'i1'", u=user)
        == []
    )  # an unknown user (no consent) gets no job, as event by event
