"""Enrichment of bookmarks an import created (docs/api-guide.md, section 13), decided by enrichment's own consumer
from ``bookmark.saved`` events with ``source: "import"``: the cached result at once (nothing charged),
a low-priority job for Pro users with useAi on, nothing for free users."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from enrichment_support import Api, AuthUsers, User, publish

from common.events import BookmarkSaved, EnrichmentResult
from devstack.testing import eventually
from enrichment import service
from enrichment.store import repository

pytestmark = pytest.mark.asyncio(loop_scope="session")


def page(key: str) -> str:
    return f"https://news.example.org/import-{key}-{uuid.uuid4().hex}"


def imported(user: User, url: str, *, source: str | None = "import") -> BookmarkSaved:
    return BookmarkSaved(
        userId=user.id,
        clientBookmarkId=f"imp-{uuid.uuid4().hex[:12]}",
        url=url,
        normalizedUrl=url,
        domain="news.example.org",
        updatedAt=datetime.now(UTC),
        created=True,
        source=source,
    )


async def known(api: Api, user: User, *, use_ai: bool, is_pro: bool) -> None:
    async def projected() -> bool:
        rows = await api.db.rows("SELECT use_ai, is_pro FROM users WHERE user_id = :u", u=user.id)
        return bool(rows) and (rows[0]["use_ai"], rows[0]["is_pro"]) == (use_ai, is_pro)

    await eventually(projected, timeout=30)


async def projected_url(api: Api, event: BookmarkSaved) -> bool:
    """The consumer handled ``event`` (the URL projection is written in the same transaction)."""
    rows = await api.db.rows(
        "SELECT 1 FROM bookmark_urls WHERE user_id = :u AND client_bookmark_id = :b",
        u=event.userId,
        b=event.clientBookmarkId,
    )
    return bool(rows)


async def enrichment_row(api: Api, event: BookmarkSaved) -> Any:
    rows = await api.db.rows(
        "SELECT be.*, j.priority FROM bookmark_enrichments be LEFT JOIN jobs j ON j.id = be.job_id "
        "WHERE be.user_id = :u AND be.client_bookmark_id = :b",
        u=event.userId,
        b=event.clientBookmarkId,
    )
    return rows[0] if rows else None


async def charges(api: Api, user: User) -> int:
    return int(await api.db.scalar("SELECT count(*) FROM quota_charges WHERE user_id = :u", u=user.id))


async def seed_cache(api: Api, url: str) -> None:
    result = EnrichmentResult(
        normalizedUrl=url,
        domain="news.example.org",
        title="Cached title",
        summary="Cached.",
        tags=["bread"],
        snapshotStatus="ready",
    ).model_dump(mode="json")
    await api.db.execute(
        "INSERT INTO results_cache (normalized_url, result, expires_at) "
        "VALUES (:n, CAST(:r AS jsonb), now() + interval '1 day')",
        n=url,
        r=json.dumps(result),
    )


async def test_pro_users_with_ai_get_a_low_priority_job_and_free_users_nothing(
    api: Api, users: AuthUsers, infra: Any
) -> None:
    pro, free = await users.create(is_pro=True), await users.create()
    await known(api, pro, use_ai=True, is_pro=True)
    await known(api, free, use_ai=True, is_pro=False)
    for_pro, for_free = imported(pro, page("pro")), imported(free, page("free"))
    await publish(infra, for_pro, for_free, for_pro)  # a redelivery adds nothing

    row = await eventually(lambda: enrichment_row(api, for_pro), timeout=30)
    assert row["status"] == "pending" and row["priority"] == 1
    await eventually(lambda: projected_url(api, for_free), timeout=30)
    assert await enrichment_row(api, for_free) is None
    assert await api.db.scalar("SELECT count(*) FROM jobs WHERE normalized_url = :n", n=for_free.normalizedUrl) == 0
    assert await api.db.scalar("SELECT count(*) FROM jobs WHERE normalized_url = :n", n=for_pro.normalizedUrl) == 1
    assert (await charges(api, pro), await charges(api, free)) == (0, 0)


async def test_a_cached_result_is_applied_at_once_and_not_charged(api: Api, users: AuthUsers, infra: Any) -> None:
    free = await users.create()
    await known(api, free, use_ai=True, is_pro=False)
    url = page("cached")
    await seed_cache(api, url)
    event = imported(free, url)
    await publish(infra, event)

    row = await eventually(lambda: enrichment_row(api, event), timeout=30)
    assert row["status"] == "completed" and row["cache_hit"] is True and row["job_id"] is None
    completed = await api.db.events("enrichment.completed", clientBookmarkId=event.clientBookmarkId)
    assert len(completed) == 1 and completed[0]["cacheHit"] is True
    assert await charges(api, free) == 0


async def test_without_ai_consent_or_outside_an_import_nothing_is_queued(
    api: Api, users: AuthUsers, infra: Any
) -> None:
    no_ai = await users.create(use_ai=False, is_pro=True)
    pro = await users.create(is_pro=True)
    await known(api, no_ai, use_ai=False, is_pro=True)
    await known(api, pro, use_ai=True, is_pro=True)
    cached_url = page("no-consent")
    await seed_cache(api, cached_url)
    events = [imported(no_ai, cached_url), imported(no_ai, page("no-consent")), imported(pro, page("put"), source=None)]
    await publish(infra, *events)
    for event in events:
        await eventually(lambda event=event: projected_url(api, event), timeout=30)
        assert await enrichment_row(api, event) is None


async def test_interactive_jobs_are_claimed_before_older_bulk_jobs(api: Api, users: AuthUsers, infra: Any) -> None:
    pro = await users.create(is_pro=True)
    await known(api, pro, use_ai=True, is_pro=True)
    bulk = imported(pro, page("bulk"))
    await publish(infra, bulk)
    bulk_job = (await eventually(lambda: enrichment_row(api, bulk), timeout=30))["job_id"]
    # The bulk job has waited longest of all: claimed by waiting time alone, it would come first.
    await api.db.execute("UPDATE jobs SET next_attempt_at = '2000-01-01T00:00:00Z' WHERE id = :id", id=bulk_job)
    assert (await api.enqueue(pro, f"bm-{uuid.uuid4().hex[:8]}", page("interactive"))).status_code == 202

    async with api.db.sessions() as session, session.begin():
        due = await repository.next_due_job(session)
    assert due is not None and due["priority"] == 0 and due["id"] != bulk_job


async def test_a_batch_of_imported_creations_reads_once_and_decides_each_as_alone(
    api: Api, users: AuthUsers, infra: Any
) -> None:
    """One consumer batch: cache hits applied, Pro work queued once per bookmark even when an event is
    delivered twice in the batch, free users' misses left alone; a second delivery of the batch adds nothing."""
    pro, free = await users.create(is_pro=True), await users.create()
    await known(api, pro, use_ai=True, is_pro=True)
    await known(api, free, use_ai=True, is_pro=False)
    hit_url = page("batch-hit")
    await seed_cache(api, hit_url)
    pro_hit, pro_miss = imported(pro, hit_url), imported(pro, page("batch-miss"))
    free_hit, free_miss = imported(free, hit_url), imported(free, page("batch-free"))
    batch = [pro_hit, pro_miss, free_miss, pro_miss, free_hit, pro_hit]
    for _ in range(2):
        async with api.db.sessions() as session, session.begin():
            await service.apply_bookmarks_saved(session, batch)

    for event in (pro_hit, free_hit):
        row = await enrichment_row(api, event)
        assert row["status"] == "completed" and row["cache_hit"] is True and row["job_id"] is None
    missed = await enrichment_row(api, pro_miss)
    assert missed["status"] == "pending" and missed["priority"] == 1
    assert await api.db.scalar("SELECT count(*) FROM jobs WHERE normalized_url = :n", n=pro_miss.normalizedUrl) == 1
    assert await enrichment_row(api, free_miss) is None
    completed = await api.db.events("enrichment.completed", normalizedUrl=hit_url)
    assert sorted(e["clientBookmarkId"] for e in completed) == sorted(
        [pro_hit.clientBookmarkId, free_hit.clientBookmarkId]
    )
