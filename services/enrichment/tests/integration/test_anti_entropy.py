"""Anti-entropy heals enrichment's bookmark-URL projection through the bookmarks service's outbox, and its
users projection through auth's.

The real bookmarks service (on a database of its own, so the pass walks only this module's users) and
the real enrichment service with a short ANTI_ENTROPY_INTERVAL_SECONDS, on the real PostgreSQL and broker;
bookmarks are written through bookmarks' API and users through auth's (the session's real auth service),
the projections are damaged by SQL, as an operator's mistake or a restore would damage them.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from enrichment_support import AuthUsers, Db, User, consumer_started, enrichment_settings

from common.metrics import ANTI_ENTROPY_CHECKS, ANTI_ENTROPY_REPAIRED
from devstack.testing import eventually, serve_app
from enrichment.main import create_app

pytestmark = pytest.mark.timeout(600)

SETTLE_SECONDS = 2.0
Row = tuple[str, str, bool]


@dataclass
class Stack:
    bookmarks: httpx.AsyncClient
    bookmarks_db: Db
    enrichment_db: Db


@pytest.fixture(scope="module")
async def stack(infra: Any, auth_url: str) -> AsyncIterator[Stack]:
    from bookmarks.main import create_app as create_bookmarks_app
    from bookmarks.settings import Settings as BookmarksSettings

    bookmarks_db = Db(infra.fresh_database("bookmarks"))
    enrichment_db = Db(infra.fresh_database("enrichment"))
    bookmarks_app = create_bookmarks_app(
        BookmarksSettings(
            database_url=bookmarks_db.url, kafka_bootstrap_servers=infra.kafka_bootstrap, auth_url=auth_url
        )
    )
    async with serve_app(bookmarks_app) as bookmarks_url:
        settings = enrichment_settings(
            infra,
            enrichment_db.url,
            auth_url=auth_url,
            bookmarks_url=bookmarks_url,
            anti_entropy_interval_seconds=0.5,
            anti_entropy_settle_seconds=SETTLE_SECONDS,
        )
        app = create_app(settings, consumer_group=f"enrichment-{uuid.uuid4()}")
        async with serve_app(app), httpx.AsyncClient(base_url=bookmarks_url, timeout=30) as http:
            await eventually(lambda: consumer_started(app), timeout=60)
            yield Stack(bookmarks=http, bookmarks_db=bookmarks_db, enrichment_db=enrichment_db)
    await bookmarks_db.close()
    await enrichment_db.close()


async def put(stack: Stack, user: User, bookmark_id: str, url: str) -> None:
    response = await stack.bookmarks.put(f"/v1/bookmarks/{bookmark_id}", json={"url": url}, headers=user.headers)
    assert response.status_code in (200, 201), response.text


async def delete(stack: Stack, user: User, bookmark_id: str) -> None:
    response = await stack.bookmarks.delete(f"/v1/bookmarks/{bookmark_id}", headers=user.headers)
    assert response.status_code in (200, 204), response.text


async def projection(stack: Stack, user: User) -> dict[str, dict[str, Any]]:
    rows = await stack.enrichment_db.rows(
        "SELECT client_bookmark_id, normalized_url, deleted, position FROM bookmark_urls WHERE user_id = :u",
        u=user.id,
    )
    return {r["client_bookmark_id"]: dict(r) for r in rows}


async def live(stack: Stack, user: User) -> set[tuple[str, str]]:
    return {(i, r["normalized_url"]) for i, r in (await projection(stack, user)).items() if not r["deleted"]}


async def outbox_ids(stack: Stack, user: User, after: int) -> list[str]:
    """Bookmark ids of the user's bookmark events written after outbox row ``after``."""
    rows = await stack.bookmarks_db.rows(
        "SELECT payload->>'clientBookmarkId' AS b FROM outbox WHERE key = :k AND id > :a AND topic LIKE 'bookmark.%' "
        "ORDER BY id",
        k=str(user.id),
        a=after,
    )
    return [r["b"] for r in rows]


async def last_outbox_id(stack: Stack) -> int:
    return int(await stack.bookmarks_db.scalar("SELECT coalesce(max(id), 0) FROM outbox"))


def completed_passes(projection: str = "bookmark_urls") -> float:
    return ANTI_ENTROPY_CHECKS.labels("enrichment", projection, "completed")._value.get()


async def passes_after(count: float, more: int, projection: str = "bookmark_urls") -> None:
    await eventually(lambda: _async(completed_passes(projection) >= count + more), timeout=60)


async def _async(value: bool) -> bool:
    return value


def url(n: int) -> str:
    return f"https://anti-entropy.example/{n}"


async def settled_library(stack: Stack, users: AuthUsers) -> User:
    """A user with b1..b6 (b6 deleted), once the projection shows them and their events are settled."""
    user = await users.create(use_ai=False)
    for n in range(1, 7):
        await put(stack, user, f"b{n}", url(n))
    await delete(stack, user, "b6")
    expected = {(f"b{n}", url(n)) for n in range(1, 6)}

    async def projected() -> bool:
        rows = await projection(stack, user)
        return await live(stack, user) == expected and rows.get("b6", {}).get("deleted") is True

    await eventually(projected, timeout=60)
    await passes_after(completed_passes(), 2)  # every event now older than the settle time, and checked
    return user


async def test_a_damaged_projection_is_repaired_and_nothing_else_touched(stack: Stack, users: AuthUsers) -> None:
    user = await settled_library(stack, users)
    before = await projection(stack, user)
    watermark = await last_outbox_id(stack)
    repaired_before = ANTI_ENTROPY_REPAIRED.labels("enrichment", "bookmark_urls")._value.get()

    db = stack.enrichment_db
    await db.execute("DELETE FROM bookmark_urls WHERE user_id = :u AND client_bookmark_id = 'b1'", u=user.id)
    await db.execute(
        "UPDATE bookmark_urls SET normalized_url = 'https://wrong.example/' WHERE user_id = :u AND client_bookmark_id = 'b2'",
        u=user.id,
    )
    await db.execute(
        "UPDATE bookmark_urls SET deleted = true WHERE user_id = :u AND client_bookmark_id = 'b3'", u=user.id
    )
    # A wrong URL that claims a newer position than the bookmark's own: the repair must still apply.
    await db.execute(
        "UPDATE bookmark_urls SET normalized_url = 'https://newer.example/', position = position + interval '1 day' "
        "WHERE user_id = :u AND client_bookmark_id = 'b4'",
        u=user.id,
    )
    await db.execute(
        "UPDATE bookmark_urls SET deleted = false WHERE user_id = :u AND client_bookmark_id = 'b6'", u=user.id
    )
    await db.execute(
        "INSERT INTO bookmark_urls (user_id, client_bookmark_id, normalized_url, deleted, position) "
        "VALUES (:u, 'extra', 'https://extra.example/', false, now())",
        u=user.id,
    )

    expected = {(f"b{n}", url(n)) for n in range(1, 6)}
    await eventually(lambda: _matches(stack, user, expected), timeout=60)

    after = await projection(stack, user)
    assert after["b5"] == before["b5"]  # untouched, position included
    assert after["b6"]["deleted"] and after["extra"]["deleted"]
    for bookmark in ("b2", "b3"):  # re-published at the bookmark's own position
        assert after[bookmark]["position"] == before[bookmark]["position"]
    republished = await outbox_ids(stack, user, watermark)
    assert set(republished) == {"b1", "b2", "b3", "b4", "b6", "extra"}  # b5 never
    assert ANTI_ENTROPY_REPAIRED.labels("enrichment", "bookmark_urls")._value.get() - repaired_before >= 6

    # A real change after the repair wins as always.
    await put(stack, user, "b4", url(44))
    await eventually(lambda: _matches(stack, user, (expected - {("b4", url(4))}) | {("b4", url(44))}), timeout=60)


async def _matches(stack: Stack, user: User, expected: set[tuple[str, str]]) -> bool:
    return await live(stack, user) == expected


async def test_an_intact_projection_republishes_nothing(stack: Stack, users: AuthUsers) -> None:
    user = await settled_library(stack, users)
    before = await projection(stack, user)
    watermark = await last_outbox_id(stack)

    await passes_after(completed_passes(), 3)

    assert await outbox_ids(stack, user, watermark) == []
    assert await projection(stack, user) == before


async def user_rows(stack: Stack, *ids: uuid.UUID) -> dict[uuid.UUID, tuple[bool, bool, bool]]:
    rows = await stack.enrichment_db.rows(
        "SELECT user_id, use_ai, is_pro, deleted FROM users WHERE user_id = ANY(:ids)", ids=list(ids)
    )
    return {r["user_id"]: (r["use_ai"], r["is_pro"], r["deleted"]) for r in rows}


async def test_a_damaged_users_projection_is_repaired_within_what_events_may_do(
    stack: Stack, users: AuthUsers, infra: Any
) -> None:
    consenting, pro, kept = await users.create(use_ai=True), await users.create(use_ai=False), await users.create()
    await users.set_pro(pro, True)
    unknown = uuid.uuid4()
    expected = {consenting.id: (True, False, False), pro.id: (False, True, False), kept.id: (True, False, False)}
    await eventually(lambda: _equal(user_rows(stack, *expected), expected), timeout=60)
    await passes_after(completed_passes("users"), 2, "users")
    auth_db = Db(infra.dsn("auth"))
    watermark = int(await auth_db.scalar("SELECT coalesce(max(id), 0) FROM outbox"))

    db = stack.enrichment_db
    await db.execute("DELETE FROM users WHERE user_id = :u", u=consenting.id)
    await db.execute("UPDATE users SET is_pro = false WHERE user_id = :u", u=pro.id)
    # Purged here while auth still has the user: deletion is final, no event may undo it.
    await db.execute("UPDATE users SET deleted = true, use_ai = false WHERE user_id = :u", u=kept.id)
    # A user auth does not have: never deleted from here by anti-entropy (that would purge a library).
    await db.execute("INSERT INTO users (user_id, use_ai, is_pro) VALUES (:u, true, true)", u=unknown)

    repaired = {consenting.id: (True, False, False), pro.id: (False, True, False)}
    await eventually(lambda: _equal(user_rows(stack, *repaired), repaired), timeout=60)
    await passes_after(completed_passes("users"), 2, "users")

    assert (await user_rows(stack, kept.id, unknown)) == {kept.id: (False, False, True), unknown: (True, True, False)}
    keys = [str(u) for u in (consenting.id, pro.id, kept.id, unknown)]
    events = await auth_db.rows(
        "SELECT key, topic FROM outbox WHERE id > :a AND key = ANY(:k) ORDER BY id", a=watermark, k=keys
    )
    assert {(e["key"], e["topic"]) for e in events} == {
        (str(consenting.id), "user.updated"),
        (str(pro.id), "user.updated"),
    }
    await auth_db.close()


async def _equal(found: Any, expected: Any) -> bool:
    return await found == expected
