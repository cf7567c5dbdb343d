"""Events: bookmark.saved/deleted through the outbox; enrichment, plan, deletion and merge consumed."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
from aiokafka import AIOKafkaConsumer
from sqlalchemy import text

from common.events import (
    EnrichmentCompleted,
    EnrichmentFailed,
    EnrichmentResult,
    UserDeleted,
    UserMerged,
    UserUpdated,
    parse_event,
)
from devstack.testing import eventually


def result_for(url: str, **overrides: Any) -> EnrichmentResult:
    values: dict[str, Any] = {
        "normalizedUrl": url,
        "domain": "e.example",
        "title": "Server title",
        "description": "Server desc",
        "thumbnailUrl": "https://e.example/t.png",
        "summary": "A summary. Two sentences.",
        "saveWhy": "Saved because it matters.",
        "tags": ["alpha", "beta"],
        "snapshotStatus": "ready",
    }
    return EnrichmentResult(**(values | overrides))


async def test_writes_are_published_through_the_outbox(http: httpx.AsyncClient, user: Any, infra: Any) -> None:
    consumer = AIOKafkaConsumer(
        "bookmark.saved",
        "bookmark.deleted",
        bootstrap_servers=infra.kafka_bootstrap,
        group_id=None,  # no group: joining one costs a rebalance of seconds; events are told apart by user
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        await http.put("/v1/bookmarks/e1", json={"url": "https://e1.example/x?utm_medium=a"}, headers=user.headers)
        await http.delete("/v1/bookmarks/e1", headers=user.headers)
        mine: list[Any] = []

        async def collect() -> bool:
            batches = await consumer.getmany(timeout_ms=200)
            for records in batches.values():
                for record in records:
                    event = parse_event(record.value)
                    if event.userId == user.id:
                        assert record.key == str(user.id).encode()
                        mine.append(event)
            return len(mine) >= 2

        await eventually(collect)
        # Two topics: ordered within each, not across them, so pick each by its type.
        [saved] = [e for e in mine if e.type == "bookmark.saved"]
        [deleted] = [e for e in mine if e.type == "bookmark.deleted"]
        assert deleted.deletedAt >= saved.updatedAt
        assert saved.type == "bookmark.saved" and saved.normalizedUrl == "https://e1.example/x" and saved.created
        assert deleted.type == "bookmark.deleted" and deleted.clientBookmarkId == "e1"
    finally:
        await consumer.stop()


async def test_enrichment_completed_is_applied_and_streamed(
    http: httpx.AsyncClient, user: Any, publish: Any, sync: Any
) -> None:
    await http.put("/v1/bookmarks/en1", json={"url": "https://e.example/page", "title": "Mine"}, headers=user.headers)
    _, _, cursor = await sync(user)
    enriched_at = datetime(2026, 11, 1, tzinfo=UTC)
    await publish(
        EnrichmentCompleted(
            userId=user.id,
            clientBookmarkId="en1",
            normalizedUrl="https://e.example/page",
            result=result_for("https://e.example/page"),
            enrichedAt=enriched_at,
        )
    )

    async def applied() -> Any:
        live, _, _ = await sync(user, cursor)
        record = live.get("en1")
        return record if record and record["enrichmentStatus"] == "completed" else None

    record = await applied_wait(applied)
    assert record["title"] == "Server title" and record["summary"] == "A summary. Two sentences."
    assert record["tags"] == ["alpha", "beta"] and record["snapshotStatus"] == "ready"
    assert record["enrichedAt"] == "2026-11-01T00:00:00.000000Z" and record["lastErrorCode"] is None
    assert record["saveWhy"] is None  # free user: Pro-gated

    # Upgrading to Pro re-streams the record so devices receive saveWhy.
    _, _, cursor = await sync(user)
    await publish(UserUpdated(userId=user.id, isAnonymous=False, isPro=True, useAi=True))

    async def pro_visible() -> Any:
        live, _, _ = await sync(user, cursor)
        return live.get("en1", {}).get("saveWhy")

    assert await eventually(pro_visible) == "Saved because it matters."


async def applied_wait(check: Any) -> Any:
    return await eventually(check)


async def test_result_arriving_before_the_bookmark_is_applied_on_create(
    http: httpx.AsyncClient, user: Any, publish: Any, bookmarks_app: Any
) -> None:
    url = "https://early.example/"
    page = "Die Häuser an der Straße werden im Frühling gestrichen."
    await publish(
        EnrichmentCompleted(
            userId=user.id,
            clientBookmarkId="early",
            normalizedUrl=url,
            result=result_for(url, title="Early title", text=page, language="de"),
        )
    )

    async def parked() -> bool:
        async with bookmarks_app.state.sessions() as session:
            found = await session.execute(
                text("SELECT 1 FROM pending_enrichments WHERE owner_uid = :o"), {"o": user.id}
            )
            return found.first() is not None

    await eventually(parked)
    data = (await http.put("/v1/bookmarks/early", json={"url": url}, headers=user.headers)).json()["data"]
    assert data["enrichmentStatus"] == "completed" and data["title"] == "Early title"
    # The page's language joins the user's search languages, so its words are found by their stems.
    async with bookmarks_app.state.sessions() as session:
        configs = (
            await session.execute(text("SELECT search_configs FROM user_streams WHERE owner_uid = :o"), {"o": user.id})
        ).scalar_one()
    assert configs == ["german"]
    found = await http.get("/v1/bookmarks/search", params={"q": "haus"}, headers=user.headers)
    assert [r["bookmark"]["clientBookmarkId"] for r in found.json()["data"]["results"]] == ["early"]


async def test_failures_set_status_and_error_code(http: httpx.AsyncClient, user: Any, publish: Any, sync: Any) -> None:
    await http.put("/v1/bookmarks/f1", json={"url": "https://f.example/"}, headers=user.headers)
    await publish(
        EnrichmentFailed(
            userId=user.id,
            clientBookmarkId="f1",
            normalizedUrl="https://f.example/",
            status="failed",
            errorCode="upstream-4xx",
        )
    )

    async def failed() -> Any:
        live, _, _ = await sync(user)
        return live["f1"] if live["f1"]["enrichmentStatus"] == "failed" else None

    record = await eventually(failed)
    assert record["lastErrorCode"] == "upstream-4xx"
    assert record["snapshotStatus"] == "failed"


async def test_user_deleted_purges_everything_and_refuses_late_writes(
    http: httpx.AsyncClient, user: Any, publish: Any, bookmarks_app: Any
) -> None:
    await http.put("/v1/bookmarks/x1", json={"url": "https://x.example/"}, headers=user.headers)

    async def outbox_rows(published: bool) -> int:
        async with bookmarks_app.state.sessions() as session:
            condition = "IS NOT NULL" if published else "IS NULL"
            rows = await session.execute(
                text(f"SELECT count(*) FROM outbox WHERE key = :k AND published_at {condition}"), {"k": str(user.id)}
            )
            return int(rows.scalar_one())

    await eventually(lambda: _is_zero(outbox_rows(published=False)))
    assert await outbox_rows(published=True) == 1
    await publish(UserDeleted(userId=user.id))

    async def purged() -> bool:
        async with bookmarks_app.state.sessions() as session:
            rows = await session.execute(
                text(
                    "SELECT (SELECT count(*) FROM bookmarks WHERE owner_uid = :o) + "
                    "(SELECT count(*) FROM user_streams WHERE owner_uid = :o) + "
                    "(SELECT count(*) FROM outbox WHERE key = :k) AS n"
                ),
                {"o": user.id, "k": str(user.id)},
            )
            return rows.one().n == 0

    await eventually(purged)
    response = await http.put("/v1/bookmarks/x2", json={"url": "https://x.example/"}, headers=user.headers)
    assert response.status_code == 401 and response.json()["code"] == "unauthorized"


async def test_merge_moves_bookmarks_later_update_wins(
    http: httpx.AsyncClient, make_user: Any, publish: Any, sync: Any
) -> None:
    owner, anon = make_user(), make_user()
    await http.put(
        "/v1/bookmarks/shared-old", json={"url": "https://o.example/", "title": "anon-older"}, headers=anon.headers
    )
    await http.put(
        "/v1/bookmarks/shared-old", json={"url": "https://o.example/", "title": "owner-newer"}, headers=owner.headers
    )
    await http.put(
        "/v1/bookmarks/shared-new", json={"url": "https://n.example/", "title": "owner-older"}, headers=owner.headers
    )
    await http.put(
        "/v1/bookmarks/shared-new", json={"url": "https://n.example/", "title": "anon-newer"}, headers=anon.headers
    )
    await http.put("/v1/bookmarks/anon-only", json={"url": "https://a.example/"}, headers=anon.headers)
    await http.delete("/v1/bookmarks/anon-gone", headers=anon.headers)
    _, _, owner_cursor = await sync(owner)

    await publish(UserMerged(userId=owner.id, sourceUserId=anon.id))

    async def merged() -> Any:
        live, dead, _ = await sync(owner, owner_cursor)
        return (live, dead) if "anon-only" in live else None

    live, dead = await eventually(merged)
    assert live["shared-new"]["title"] == "anon-newer"
    assert live["anon-only"]["ownerUid"] == str(owner.id)
    assert "anon-gone" in dead
    full_live, _, _ = await sync(owner)
    assert full_live["shared-old"]["title"] == "owner-newer"
    response = await http.get("/v1/bookmarks/delta", headers=anon.headers)
    assert response.status_code == 401


async def _is_zero(count: Any) -> bool:
    return await count == 0


async def test_saved_events_tell_which_writes_change_the_url_or_revive(
    http: httpx.AsyncClient, user: Any, infra: Any
) -> None:
    """Issue 15: enrichment's projection consumes only the saves that can change it; the event says which."""
    consumer = AIOKafkaConsumer(
        "bookmark.saved",
        "bookmark.deleted",
        bootstrap_servers=infra.kafka_bootstrap,
        group_id=None,  # no group: joining one costs a rebalance of seconds; events are told apart by user
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        writes = [
            ("PUT", {"url": "https://r1.example/a"}),
            ("PUT", {"url": "https://r1.example/a", "title": "Only the title"}),
            ("DELETE", None),
            ("PUT", {"url": "https://r1.example/a"}),
            ("PUT", {"url": "https://r1.example/b"}),
        ]
        for method, body in writes:
            response = await http.request(method, "/v1/bookmarks/r1", json=body, headers=user.headers)
            assert response.status_code in (200, 201, 204), response.text
        mine: list[Any] = []

        async def collect() -> bool:
            batches = await consumer.getmany(timeout_ms=200)
            for records in batches.values():
                mine.extend(e for e in (parse_event(r.value) for r in records) if e.userId == user.id)
            return len(mine) >= 5

        await eventually(collect)
        # Two topics: no order across them; the stream position (one allocator per user) orders them.
        mine.sort(key=lambda e: e.deletedAt if e.type == "bookmark.deleted" else e.updatedAt)
        assert [e.type for e in mine] == ["bookmark.saved"] * 2 + ["bookmark.deleted"] + ["bookmark.saved"] * 2
        saves = [e for e in mine if e.type == "bookmark.saved"]
        assert [(e.created, e.urlChanged, e.revived) for e in saves] == [
            (True, False, False),
            (False, False, False),
            (False, False, True),
            (False, True, False),
        ]
        assert [e.changes_url_or_liveness() for e in saves] == [True, False, True, True]
    finally:
        await consumer.stop()
