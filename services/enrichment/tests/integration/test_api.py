"""The enrichment API against real PostgreSQL, the real broker and the real auth service.

No worker runs on this database: jobs stay where a test leaves them, and a test that needs a finished
job ends it with the worker's own use case (``service.complete_job``).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
from aiokafka import AIOKafkaConsumer
from enrichment_support import (
    Api,
    AuthUsers,
    Db,
    MutableClock,
    User,
    auth_app,
    enrichment_settings,
    publish,
)

from common.events import (
    BookmarkDeleted,
    BookmarkSaved,
    EnrichmentResult,
    UserMerged,
)
from devstack.testing import LocalJwksServer, eventually, serve_app
from enrichment import service
from enrichment.main import create_app
from enrichment.service import ClaimedJob, Snapshot

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def page(key: str, query: str = "") -> str:
    return f"https://news.example.org/{key}{query}"


def cached_result(url: str, **fields: Any) -> dict[str, Any]:
    return EnrichmentResult(
        normalizedUrl=url,
        domain="news.example.org",
        title="Cached title",
        description="Cached description",
        thumbnailUrl="https://news.example.org/t.png",
        summary="A summary. It has two sentences.",
        saveWhy="Worth keeping for later.",
        tags=["bread", "baking"],
        snapshotStatus="ready",
        **fields,
    ).model_dump(mode="json")


async def seed_cache(db: Db, url: str, *, expired: bool = False) -> None:
    await db.execute(
        "INSERT INTO results_cache (normalized_url, result, expires_at) VALUES (:n, CAST(:r AS jsonb), "
        "now() + CASE WHEN :expired THEN interval '-1 minute' ELSE interval '1 day' END)",
        n=url,
        r=json.dumps(cached_result(url)),
        expired=expired,
    )


async def job_of(db: Db, user: User, bookmark_id: str) -> Any:
    return await db.one(
        "SELECT j.* FROM bookmark_enrichments be JOIN jobs j ON j.id = be.job_id "
        "WHERE be.user_id = :u AND be.client_bookmark_id = :b",
        u=user.id,
        b=bookmark_id,
    )


async def month_used(db: Db, user: User) -> int:
    return int(await db.scalar("SELECT COALESCE(max(month_used), 0) FROM user_quotas WHERE user_id = :u", u=user.id))


async def finish_job(db: Db, job_id: uuid.UUID, *, snapshots: list[Snapshot] | None = None) -> EnrichmentResult:
    """End a job exactly as a worker does: take the lease, then record the result with complete_job."""
    row = await db.one(
        "UPDATE jobs SET status = 'processing', attempts = attempts + 1, worker_id = 'test-worker', "
        "lease_until = now() + interval '1 minute' WHERE id = :id RETURNING *",
        id=job_id,
    )
    result = EnrichmentResult.model_validate(cached_result(row["normalized_url"]))
    kept = await service.complete_job(
        sessions=db.sessions,
        job=ClaimedJob(
            id=row["id"],
            url=row["url"],
            normalized_url=row["normalized_url"],
            attempts=row["attempts"],
            existing_tags=[],
        ),
        worker_id="test-worker",
        result=result,
        snapshots=snapshots or [],
        cache_ttl_seconds=3600,
    )
    assert kept
    return result


# --- authentication and the order of checks ----------------------------------------------------------


async def test_enqueue_needs_an_access_token(api: Api) -> None:
    response = await api.http.post(
        "/v1/enrichment/enqueue",
        json={"clientBookmarkId": "a", "url": page("x"), "clientSavedAt": "2030-01-01T00:00:00Z"},
    )
    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"


async def test_non_string_alg_or_kid_in_the_token_header_is_401(api: Api, users: AuthUsers) -> None:
    # Refused on the header alone, before any key is looked up: a stand-in signer is enough.
    signer = LocalJwksServer(issuer="bookmarks-auth", audience="bookmarks-api")
    body = {"clientBookmarkId": "a", "url": page("x"), "clientSavedAt": "2030-01-01T00:00:00Z"}
    for name, token in signer.hostile_header_tokens(sub=str(uuid.uuid4()), claims={"jti": "j"}).items():
        headers = {"Authorization": f"Bearer {token}"}
        enqueue = await api.http.post("/v1/enrichment/enqueue", json=body, headers=headers)
        status = await api.http.get("/v1/enrichment/status", params={"clientBookmarkId": "a"}, headers=headers)
        for response in (enqueue, status):
            assert response.status_code == 401, (name, response.text)
            assert response.json()["code"] == "unauthorized"


async def test_body_is_validated_before_consent(api: Api, users: AuthUsers) -> None:
    no_consent = await users.create(use_ai=False)
    bad_bodies: list[dict[str, Any]] = [
        {"clientBookmarkId": "has space", "url": page("a"), "clientSavedAt": "2030-01-01T00:00:00Z"},
        {"clientBookmarkId": "x" * 129, "url": page("a"), "clientSavedAt": "2030-01-01T00:00:00Z"},
        {"clientBookmarkId": "ok", "url": page("a")},  # clientSavedAt is required
        {"clientBookmarkId": "ok", "url": page("a"), "clientSavedAt": "yesterday"},
        {"clientBookmarkId": "ok", "url": page("a"), "clientSavedAt": 1700000000},
        {"clientBookmarkId": "ok", "url": 42, "clientSavedAt": "2030-01-01T00:00:00Z"},
        {"clientBookmarkId": "ok", "url": "https://a.example/" + "x" * 2048, "clientSavedAt": "2030-01-01T00:00:00Z"},
    ]
    for body in bad_bodies:
        response = await api.http.post("/v1/enrichment/enqueue", json=body, headers=no_consent.headers)
        assert response.status_code == 400, body
        assert response.json()["code"] == "invalid-request"
    malformed = await api.http.post(
        "/v1/enrichment/enqueue",
        content=b"{not json",
        headers={**no_consent.headers, "content-type": "application/json"},
    )
    assert malformed.status_code == 400
    assert malformed.json()["code"] == "invalid-request"


async def test_nul_text_and_bad_timestamps_are_refused_and_change_nothing(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create()
    bookmark = bid()
    ok_at = "2030-01-01T00:00:00Z"
    cases: list[tuple[dict[str, Any], str]] = [
        ({"clientBookmarkId": bookmark, "url": page("nul\u0000x"), "clientSavedAt": ok_at}, "url"),
        ({"clientBookmarkId": bookmark, "url": page("lone\ud800"), "clientSavedAt": ok_at}, "url"),
        ({"clientBookmarkId": "a\u0000b", "url": page("nul"), "clientSavedAt": ok_at}, "clientBookmarkId"),
        ({"clientBookmarkId": bookmark, "url": page("nul"), "clientSavedAt": "1"}, "clientSavedAt"),
        ({"clientBookmarkId": bookmark, "url": page("nul"), "clientSavedAt": "1700000000"}, "clientSavedAt"),
        (
            {"clientBookmarkId": bookmark, "url": page("nul"), "clientSavedAt": "9999-12-31T23:59:59-23:59"},
            "clientSavedAt",
        ),
        (
            {"clientBookmarkId": bookmark, "url": page("nul"), "clientSavedAt": "0001-01-01T00:00:00+14:00"},
            "clientSavedAt",
        ),
    ]
    for body, field in cases:
        response = await api.http.post(
            "/v1/enrichment/enqueue",
            content=json.dumps(body),
            headers={**user.headers, "content-type": "application/json"},
        )
        assert response.status_code == 400, (body, response.text)
        assert response.json()["code"] == "invalid-request" and field in response.json()["message"], body
    status = await api.http.get("/v1/enrichment/status", params={"clientBookmarkId": "a\u0000b"}, headers=user.headers)
    assert status.status_code == 400 and status.json()["code"] == "invalid-request"
    assert not await api.db.rows("SELECT 1 FROM bookmark_enrichments WHERE user_id = :u", u=user.id)
    assert await month_used(api.db, user) == 0


async def test_consent_is_checked_before_the_url(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create(use_ai=False)
    response = await api.enqueue(user, bid(), "ftp://files.example.org/x")
    assert response.status_code == 403
    assert response.json()["code"] == "consent-required"

    # Read-your-writes: consent given a moment ago counts for the very next request.
    await users.set_consent(user, True)
    for bad_url in ("ftp://files.example.org/x", "not a url", "https://", "javascript:alert(1)"):
        response = await api.enqueue(user, bid(), bad_url)
        assert response.status_code == 400, bad_url
        assert response.json()["code"] == "invalid-url"
    response = await api.enqueue(user, bid(), page(f"consent-{uuid.uuid4().hex}"))
    assert response.status_code == 202
    assert response.json() == {"accepted": True, "status": "pending"}

    await users.set_consent(user, False)
    response = await api.enqueue(user, bid(), page(f"consent-{uuid.uuid4().hex}"))
    assert response.status_code == 403


# --- job creation, existing jobs, duplicates ----------------------------------------------------------


async def test_new_job_is_pending_and_charged_once(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create()
    bookmark = bid()
    url = page(f"new-{uuid.uuid4().hex}")
    first = await api.enqueue(user, bookmark, url)
    assert first.status_code == 202
    assert first.json() == {"accepted": True, "status": "pending"}
    job = await job_of(api.db, user, bookmark)
    assert job["status"] == "pending"
    assert job["normalized_url"] == url
    assert job["charged_user_id"] == user.id
    assert "traceparent" in job["trace_context"]  # the attempt's trace links back to this request
    assert await month_used(api.db, user) == 1

    # The same bookmark again: its job is reported, nothing new is created or charged.
    again = await api.enqueue(user, bookmark, url)
    assert again.status_code == 202
    assert again.json() == {"accepted": True, "status": "pending"}
    assert await month_used(api.db, user) == 1
    assert await api.db.scalar("SELECT count(*) FROM jobs WHERE normalized_url = :n", n=url) == 1

    status = await api.status(user, bookmark)
    assert status.status_code == 200
    assert status.json() == {
        "data": {"clientBookmarkId": bookmark, "status": "pending", "result": None, "errorCode": None}
    }


async def test_existing_job_reports_its_live_status(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create()
    bookmark = bid()
    url = page(f"live-{uuid.uuid4().hex}")
    assert (await api.enqueue(user, bookmark, url)).status_code == 202
    job = await job_of(api.db, user, bookmark)
    await api.db.execute(
        "UPDATE jobs SET status = 'retrying', attempts = 1, error_code = 'upstream-5xx' WHERE id = :id", id=job["id"]
    )
    again = await api.enqueue(user, bookmark, url)
    assert again.status_code == 202
    assert again.json() == {"accepted": True, "status": "retrying"}
    assert await month_used(api.db, user) == 1
    status = (await api.status(user, bookmark)).json()["data"]
    assert status["status"] == "retrying"
    assert status["errorCode"] == "upstream-5xx"
    assert status["result"] is None


async def test_duplicate_url_under_another_bookmark_reuses_the_job(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create()
    first, second = bid(), bid()
    key = f"dup-{uuid.uuid4().hex}"
    assert (await api.enqueue(user, first, page(key))).status_code == 202
    # Same page after normalization (www., tracking parameter, fragment).
    response = await api.enqueue(user, second, f"https://www.news.example.org/{key}?utm_source=x#top")
    assert response.status_code == 202
    assert response.json() == {"accepted": True, "status": "pending"}
    assert await month_used(api.db, user) == 1
    job = await job_of(api.db, user, first)
    assert (await job_of(api.db, user, second))["id"] == job["id"]

    # When the job ends, EVERY attached bookmark gets its event.
    await finish_job(api.db, job["id"])
    completed = await api.db.events("enrichment.completed", userId=str(user.id))
    assert {e["clientBookmarkId"] for e in completed} == {first, second}
    assert all(e["cacheHit"] is False for e in completed)


async def test_completed_duplicate_is_applied_at_once(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create()
    first, second = bid(), bid()
    url = page(f"dupdone-{uuid.uuid4().hex}")
    assert (await api.enqueue(user, first, url)).status_code == 202
    await finish_job(api.db, (await job_of(api.db, user, first))["id"])
    # The cache entry is gone (expired), but the user's own other bookmark has the result.
    await api.db.execute("DELETE FROM results_cache WHERE normalized_url = :n", n=url)

    response = await api.enqueue(user, second, url)
    assert response.status_code == 200
    assert response.json() == {"cacheHit": True, "status": "completed"}
    assert await month_used(api.db, user) == 1
    events = await api.db.events("enrichment.completed", clientBookmarkId=second)
    assert len(events) == 1 and events[0]["cacheHit"] is True
    assert (await api.status(user, second)).json()["data"]["result"]["title"] == "Cached title"


async def test_job_in_flight_for_another_user_is_shared_not_charged(api: Api, users: AuthUsers, bid: Any) -> None:
    alice, bob = await users.create(), await users.create()
    url = page(f"shared-{uuid.uuid4().hex}")
    a, b = bid(), bid()
    assert (await api.enqueue(alice, a, url)).status_code == 202
    response = await api.enqueue(bob, b, url)
    assert response.status_code == 202
    assert response.json() == {"accepted": True, "status": "pending"}
    assert await month_used(api.db, bob) == 0
    assert (await job_of(api.db, alice, a))["id"] == (await job_of(api.db, bob, b))["id"]


async def test_concurrent_first_enqueues_of_one_url_create_one_job(api: Api, users: AuthUsers, bid: Any) -> None:
    people = [await users.create() for _ in range(5)]
    url = page(f"race-{uuid.uuid4().hex}")
    responses = await asyncio.gather(*(api.enqueue(p, bid(), url) for p in people))
    assert [r.status_code for r in responses] == [202] * 5
    assert await api.db.scalar("SELECT count(*) FROM jobs WHERE normalized_url = :n", n=url) == 1
    charged = [await month_used(api.db, p) for p in people]
    assert sorted(charged) == [0, 0, 0, 0, 1]


# --- the results cache ------------------------------------------------------------------------------


async def test_cache_hit_applies_result_charges_nothing_and_publishes(
    api: Api, users: AuthUsers, bid: Any, infra: Any
) -> None:
    user = await users.create()
    bookmark = bid()
    url = page(f"cached-{uuid.uuid4().hex}")
    await seed_cache(api.db, url)

    response = await api.enqueue(user, bookmark, url + "?utm_campaign=spring")
    assert response.status_code == 200
    assert response.json() == {"cacheHit": True, "status": "completed"}
    assert await month_used(api.db, user) == 0
    assert await api.db.scalar("SELECT count(*) FROM jobs WHERE normalized_url = :n", n=url) == 0

    outbox = await api.db.events("enrichment.completed", clientBookmarkId=bookmark)
    assert len(outbox) == 1
    assert outbox[0]["cacheHit"] is True
    assert outbox[0]["userId"] == str(user.id)
    assert outbox[0]["result"]["summary"] == "A summary. It has two sentences."

    # ... and the relay publishes it to the broker for bookmarks to apply.
    consumer = AIOKafkaConsumer(
        "enrichment.completed",
        bootstrap_servers=infra.kafka_bootstrap,
        group_id=f"t-{uuid.uuid4()}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:

        async def published() -> bool:
            batches = await consumer.getmany(timeout_ms=500)
            return any(
                json.loads(r.value)["clientBookmarkId"] == bookmark for records in batches.values() for r in records
            )

        await eventually(published)
    finally:
        await consumer.stop()

    status = (await api.status(user, bookmark)).json()["data"]
    assert status["status"] == "completed"
    assert status["errorCode"] is None
    assert status["result"] == {
        "normalizedUrl": url,
        "domain": "news.example.org",
        "title": "Cached title",
        "description": "Cached description",
        "thumbnailUrl": "https://news.example.org/t.png",
        "summary": "A summary. It has two sentences.",
        "saveWhy": None,  # free user
        "tags": ["bread", "baking"],
        "snapshotStatus": "ready",
    }
    assert await api.db.scalar("SELECT array_agg(tag ORDER BY tag) FROM user_tags WHERE user_id = :u", u=user.id) == [
        "baking",
        "bread",
    ]


async def test_expired_cache_entry_is_a_miss(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create()
    url = page(f"expired-{uuid.uuid4().hex}")
    await seed_cache(api.db, url, expired=True)
    response = await api.enqueue(user, bid(), url)
    assert response.status_code == 202
    assert await month_used(api.db, user) == 1


# --- quotas ------------------------------------------------------------------------------------------


async def test_twenty_concurrent_enqueues_create_exactly_five_jobs(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create()
    urls = [page(f"burst-{uuid.uuid4().hex}") for _ in range(20)]
    responses = await asyncio.gather(*(api.enqueue(user, bid(), url) for url in urls))
    codes = sorted(r.status_code for r in responses)
    assert codes == [202] * 5 + [429] * 15
    for rejected in (r for r in responses if r.status_code == 429):
        assert rejected.json()["code"] == "quota-exceeded"
        assert 1 <= int(rejected.headers["Retry-After"]) <= 60
    assert await api.db.scalar("SELECT count(*) FROM jobs WHERE charged_user_id = :u", u=user.id) == 5
    assert await month_used(api.db, user) == 5


async def test_pro_users_are_not_limited(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create(is_pro=True)
    responses = [await api.enqueue(user, bid(), page(f"pro-{uuid.uuid4().hex}")) for _ in range(8)]
    assert [r.status_code for r in responses] == [202] * 8


async def test_monthly_quota_and_rollover(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create()
    clock: MutableClock = api.clock
    clock.set(datetime(2031, 1, 31, 20, 0, tzinfo=UTC))
    try:
        for i in range(200):
            if i and i % 5 == 0:
                clock.advance(seconds=61)  # stay under the per-minute limit
            response = await api.enqueue(user, bid(), page(f"month-{uuid.uuid4().hex}"))
            assert response.status_code == 202, (i, response.text)
        assert await month_used(api.db, user) == 200

        clock.advance(seconds=61)
        refused = await api.enqueue(user, bid(), page(f"month-{uuid.uuid4().hex}"))
        assert refused.status_code == 429
        body = refused.json()
        assert body["code"] == "quota-exceeded"
        assert "monthly enrichment limit" in body["message"].lower()
        assert "pro" in body["message"].lower()
        until_february = datetime(2031, 2, 1, tzinfo=UTC) - clock.now()
        assert int(refused.headers["Retry-After"]) == int(until_february.total_seconds()) + (
            0 if until_february.total_seconds().is_integer() else 1
        )

        # The 1st of the next month (UTC) starts a fresh allowance.
        clock.set(datetime(2031, 2, 1, 0, 0, 5, tzinfo=UTC))
        response = await api.enqueue(user, bid(), page(f"month-{uuid.uuid4().hex}"))
        assert response.status_code == 202
        assert await month_used(api.db, user) == 1
    finally:
        clock.set(None)


async def test_per_minute_quota_is_a_rolling_window(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create()
    clock: MutableClock = api.clock
    clock.set(datetime(2031, 3, 10, 12, 0, 0, tzinfo=UTC))
    try:
        for _ in range(5):
            assert (await api.enqueue(user, bid(), page(f"minute-{uuid.uuid4().hex}"))).status_code == 202
            clock.advance(seconds=10)
        # 50 s after the first charge: the window still holds five.
        refused = await api.enqueue(user, bid(), page(f"minute-{uuid.uuid4().hex}"))
        assert refused.status_code == 429
        assert "per minute" in refused.json()["message"]
        assert refused.headers["Retry-After"] == "10"
        # Nothing was charged for the refusal, and cache hits stay free while limited.
        cached = page(f"minute-cached-{uuid.uuid4().hex}")
        await seed_cache(api.db, cached)
        assert (await api.enqueue(user, bid(), cached)).status_code == 200
        clock.advance(seconds=11)  # the first charge left the window
        assert (await api.enqueue(user, bid(), page(f"minute-{uuid.uuid4().hex}"))).status_code == 202
        assert await month_used(api.db, user) == 6
    finally:
        clock.set(None)


async def quota(api: Api, user: User) -> dict[str, Any]:
    response = await api.http.get("/v1/enrichment/quota", headers=user.headers)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def test_quota_use_counts_the_jobs_the_check_counts(api: Api, users: AuthUsers, bid: Any) -> None:
    alice, bob = await users.create(), await users.create()
    clock: MutableClock = api.clock
    clock.set(datetime(2031, 11, 20, 9, 30, tzinfo=UTC))
    try:
        assert await quota(api, alice) == {
            "plan": "free",
            "monthlyLimit": 200,
            "usedThisMonth": 0,
            "remainingThisMonth": 200,
            "resetsAt": "2031-12-01T00:00:00Z",
            "perMinuteLimit": 5,
        }
        for _ in range(3):
            assert (await api.enqueue(alice, bid(), page(f"use-{uuid.uuid4().hex}"))).status_code == 202
        # A cache hit and a job another user already started are free, and not counted.
        cached = page(f"use-cached-{uuid.uuid4().hex}")
        await seed_cache(api.db, cached)
        assert (await api.enqueue(alice, bid(), cached)).status_code == 200
        shared = page(f"use-shared-{uuid.uuid4().hex}")
        assert (await api.enqueue(bob, bid(), shared)).status_code == 202
        assert (await api.enqueue(alice, bid(), shared)).status_code == 202

        use = await quota(api, alice)
        assert (use["usedThisMonth"], use["remainingThisMonth"]) == (3, 197)
        assert use["usedThisMonth"] == await month_used(api.db, alice)
        # Each user sees only their own counter.
        assert (await quota(api, bob))["usedThisMonth"] == 1

        # The 1st of the next month (UTC): the old count no longer applies, before any enqueue rolls it.
        clock.set(datetime(2031, 12, 1, 0, 0, 1, tzinfo=UTC))
        rolled = await quota(api, alice)
        assert (rolled["usedThisMonth"], rolled["remainingThisMonth"]) == (0, 200)
        assert rolled["resetsAt"] == "2032-01-01T00:00:00Z"
    finally:
        clock.set(None)


async def test_quota_remaining_never_goes_below_zero(api: Api, users: AuthUsers) -> None:
    user = await users.create()
    # A count above the limit (the limit lowered under existing counts) still reads as nothing left.
    month = datetime.now(UTC).date().replace(day=1)
    await api.db.execute(
        "INSERT INTO user_quotas (user_id, month, month_used) VALUES (:u, :m, 250)", u=user.id, m=month
    )
    use = await quota(api, user)
    assert (use["usedThisMonth"], use["remainingThisMonth"]) == (250, 0)


async def test_quota_of_a_pro_user_has_no_limits(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create(is_pro=True)
    assert (await api.enqueue(user, bid(), page(f"pro-use-{uuid.uuid4().hex}"))).status_code == 202
    use = await quota(api, user)
    assert use["plan"] == "pro"
    assert (use["monthlyLimit"], use["remainingThisMonth"], use["perMinuteLimit"]) == (None, None, None)
    assert use["usedThisMonth"] == 0  # Pro job creations are not counted against the free allowance
    await users.set_pro(user, False)  # read-your-writes: the plan follows auth at once
    assert (await quota(api, user))["plan"] == "free"


async def test_quota_needs_an_access_token(api: Api) -> None:
    response = await api.http.get("/v1/enrichment/quota")
    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"
    bad = await api.http.get("/v1/enrichment/quota", headers={"Authorization": "Bearer not-a-token"})
    assert bad.status_code == 401
    assert bad.json()["code"] == "unauthorized"


# --- status and snapshots ------------------------------------------------------------------------------


async def test_status_of_unknown_or_foreign_bookmark_is_404(api: Api, users: AuthUsers, bid: Any) -> None:
    owner, other = await users.create(), await users.create()
    bookmark = bid()
    assert (await api.enqueue(owner, bookmark, page(f"own-{uuid.uuid4().hex}"))).status_code == 202
    for user, bookmark_id in ((owner, bid()), (other, bookmark)):
        response = await api.status(user, bookmark_id)
        assert response.status_code == 404
        assert response.json()["code"] == "not-found"
    bad = await api.http.get("/v1/enrichment/status", params={"clientBookmarkId": "no spaces"}, headers=owner.headers)
    assert bad.status_code == 400
    assert bad.json()["code"] == "invalid-request"
    missing = await api.http.get("/v1/enrichment/status", headers=owner.headers)
    assert missing.status_code == 400


async def test_save_why_is_pro_gated(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create()
    bookmark = bid()
    assert (await api.enqueue(user, bookmark, page(f"gate-{uuid.uuid4().hex}"))).status_code == 202
    await finish_job(api.db, (await job_of(api.db, user, bookmark))["id"])

    free = (await api.status(user, bookmark)).json()["data"]
    assert free["status"] == "completed"
    assert free["result"]["summary"] == "A summary. It has two sentences."
    assert free["result"]["saveWhy"] is None

    await users.set_pro(user, True)  # read-your-writes: the next request already sees Pro
    pro = (await api.status(user, bookmark)).json()["data"]
    assert pro["result"]["saveWhy"] == "Worth keeping for later."


async def test_snapshot_download_is_owner_only(api: Api, users: AuthUsers, bid: Any) -> None:
    owner, other = await users.create(), await users.create()
    bookmark = bid()
    assert (await api.enqueue(owner, bookmark, page(f"snap-{uuid.uuid4().hex}"))).status_code == 202

    async def snapshot(user: User, bookmark_id: str, kind: str) -> httpx.Response:
        return await api.http.get(
            "/v1/enrichment/snapshot", params={"clientBookmarkId": bookmark_id, "kind": kind}, headers=user.headers
        )

    # Nothing yet while the job is pending.
    assert (await snapshot(owner, bookmark, "html")).status_code == 404

    html = "<html><body><script>alert(1)</script><p>Hi ü</p></body></html>"
    await finish_job(
        api.db,
        (await job_of(api.db, owner, bookmark))["id"],
        snapshots=[
            Snapshot("html", "text/html; charset=utf-8", html.encode()),
            Snapshot("screenshot", "image/png", PNG),
            Snapshot("readable_text", "text/plain; charset=utf-8", "Hi ü".encode()),
            Snapshot("thumbnail", "image/webp", b"RIFF\x00\x00\x00\x00WEBPVP8 "),
        ],
    )
    got = await snapshot(owner, bookmark, "html")
    assert got.status_code == 200
    assert got.headers["content-type"] == "text/html; charset=utf-8"
    assert got.text == html
    assert "sandbox" in got.headers["content-security-policy"]
    assert got.headers["x-content-type-options"] == "nosniff"
    shot = await snapshot(owner, bookmark, "screenshot")
    assert shot.status_code == 200
    assert shot.headers["content-type"] == "image/png"
    assert shot.content == PNG
    thumbnail = await snapshot(owner, bookmark, "thumbnail")
    assert thumbnail.status_code == 200
    assert thumbnail.headers["content-type"] == "image/webp"
    assert thumbnail.content == b"RIFF\x00\x00\x00\x00WEBPVP8 "
    assert "sandbox" in thumbnail.headers["content-security-policy"]
    assert thumbnail.headers["x-content-type-options"] == "nosniff"
    assert thumbnail.headers["content-disposition"] == 'attachment; filename="thumbnail.webp"'

    for user, bookmark_id in ((other, bookmark), (owner, bid())):
        denied = await snapshot(user, bookmark_id, "html")
        assert denied.status_code == 404
        assert denied.json()["code"] == "not-found"
    assert (await snapshot(owner, bookmark, "pdf")).status_code == 400
    anonymous = await api.http.get("/v1/enrichment/snapshot", params={"clientBookmarkId": bookmark, "kind": "html"})
    assert anonymous.status_code == 401


# --- auth unreachable: the projection answers ------------------------------------------------------


async def test_entitlements_fall_back_to_the_projection_when_auth_is_down(
    api: Api, users: AuthUsers, bid: Any, infra: Any
) -> None:
    consenting, refusing = await users.create(), await users.create(use_ai=False)
    # user.updated travels auth → outbox → broker → our consumer into the projection.
    for user, use_ai in ((consenting, True), (refusing, False)):
        await eventually(lambda u=user, a=use_ai: _projected(api.db, u, a))

    # A second auth instance (same database, same keys) that we can stop while the API keeps running.
    auth_server = serve_app(auth_app(infra))
    doomed_auth = await auth_server.__aenter__()
    stopped = False
    app = create_app(
        enrichment_settings(infra, api.db.url, auth_url=doomed_auth), consumer_group=f"enrichment-{uuid.uuid4()}"
    )
    try:
        async with serve_app(app) as base_url, httpx.AsyncClient(base_url=base_url, timeout=30) as http:

            async def enqueue(user: User) -> httpx.Response:
                body = {
                    "clientBookmarkId": bid(),
                    "url": page(f"fallback-{uuid.uuid4().hex}"),
                    "clientSavedAt": "2030-01-01T00:00:00Z",
                }
                return await http.post("/v1/enrichment/enqueue", json=body, headers=user.headers)

            # While auth is up this API instance learns its signing keys (they stay cached).
            assert (await enqueue(consenting)).status_code == 202
            await auth_server.__aexit__(None, None, None)
            stopped = True

            ok = await enqueue(consenting)
            assert ok.status_code == 202, ok.text
            refused = await enqueue(refusing)
            assert refused.status_code == 403
            assert refused.json()["code"] == "consent-required"
    finally:
        if not stopped:
            await auth_server.__aexit__(None, None, None)


async def _projected(db: Db, user: User, use_ai: bool) -> bool:
    found = await db.rows("SELECT use_ai FROM users WHERE user_id = :u", u=user.id)
    return bool(found) and found[0]["use_ai"] is use_ai


# --- events from other services -----------------------------------------------------------------------


async def test_bookmark_events_maintain_the_url_projection(api: Api, infra: Any, bid: Any) -> None:
    user_id = uuid.uuid4()
    bookmark = bid()
    url = page(f"projection-{uuid.uuid4().hex}")
    saved = BookmarkSaved(
        userId=user_id,
        clientBookmarkId=bookmark,
        url=url,
        normalizedUrl=url,
        domain="news.example.org",
        updatedAt=datetime(2030, 1, 1, tzinfo=UTC),
        created=True,
    )
    await publish(infra, saved, saved)  # a redelivery changes nothing

    async def row() -> Any:
        found = await api.db.rows(
            "SELECT * FROM bookmark_urls WHERE user_id = :u AND client_bookmark_id = :b", u=user_id, b=bookmark
        )
        return found[0] if found else None

    first = await eventually(row)
    assert first["normalized_url"] == url and first["deleted"] is False

    await publish(
        infra,
        BookmarkDeleted(
            userId=user_id, clientBookmarkId=bookmark, normalizedUrl=url, deletedAt=datetime(2030, 1, 2, tzinfo=UTC)
        ),
    )
    await eventually(lambda: _deleted(api.db, user_id, bookmark))
    # A stale save (older position) arriving late does not revive it.
    await publish(infra, saved.model_copy(update={"eventId": uuid.uuid4()}))
    marker = BookmarkSaved(
        userId=user_id,
        clientBookmarkId="marker",
        url=url,
        normalizedUrl=url,
        domain="news.example.org",
        updatedAt=datetime(2030, 1, 3, tzinfo=UTC),
    )
    await publish(infra, marker)
    await eventually(
        lambda: api.db.rows(
            "SELECT 1 FROM bookmark_urls WHERE user_id = :u AND client_bookmark_id = 'marker'", u=user_id
        )
    )
    assert await _deleted(api.db, user_id, bookmark)


async def _deleted(db: Db, user_id: uuid.UUID, bookmark: str) -> bool:
    found = await db.rows(
        "SELECT deleted FROM bookmark_urls WHERE user_id = :u AND client_bookmark_id = :b", u=user_id, b=bookmark
    )
    return bool(found) and found[0]["deleted"] is True


async def test_user_deleted_purges_the_user_but_keeps_shared_results(api: Api, users: AuthUsers, bid: Any) -> None:
    doomed, other = await users.create(), await users.create()
    alone, shared, cached = bid(), bid(), bid()
    alone_url = page(f"alone-{uuid.uuid4().hex}")
    shared_url = page(f"shared-del-{uuid.uuid4().hex}")
    cached_url = page(f"cached-del-{uuid.uuid4().hex}")
    assert (await api.enqueue(doomed, alone, alone_url)).status_code == 202
    assert (await api.enqueue(doomed, shared, shared_url)).status_code == 202
    assert (await api.enqueue(other, bid(), shared_url)).status_code == 202
    await seed_cache(api.db, cached_url)
    assert (await api.enqueue(doomed, cached, cached_url)).status_code == 200
    alone_job = (await job_of(api.db, doomed, alone))["id"]
    shared_job = (await job_of(api.db, doomed, shared))["id"]

    await users.delete(doomed)  # auth emits user.deleted; our consumer purges
    await eventually(lambda: api.db.rows("SELECT 1 FROM users WHERE user_id = :u AND deleted", u=doomed.id))
    for table in ("bookmark_enrichments", "user_quotas", "quota_charges", "bookmark_urls", "user_tags"):
        assert await api.db.scalar(f"SELECT count(*) FROM {table} WHERE user_id = :u", u=doomed.id) == 0, table
    assert await api.db.scalar("SELECT count(*) FROM jobs WHERE id = :id", id=alone_job) == 0
    shared_row = await api.db.one("SELECT * FROM jobs WHERE id = :id", id=shared_job)
    assert shared_row["charged_user_id"] is None  # still running for the other user, no longer linked
    assert await api.db.scalar("SELECT count(*) FROM jobs WHERE charged_user_id = :u", u=doomed.id) == 0
    assert await api.db.scalar("SELECT count(*) FROM results_cache WHERE normalized_url = :n", n=cached_url) == 1


async def test_user_merged_moves_enrichments_unless_the_target_has_the_bookmark(
    api: Api, users: AuthUsers, bid: Any, infra: Any
) -> None:
    source, target = await users.create(), await users.create()
    moved, clash = bid(), bid()
    assert (await api.enqueue(source, moved, page(f"merge-{uuid.uuid4().hex}"))).status_code == 202
    assert (await api.enqueue(source, clash, page(f"merge-src-{uuid.uuid4().hex}"))).status_code == 202
    target_url = page(f"merge-tgt-{uuid.uuid4().hex}")
    assert (await api.enqueue(target, clash, target_url)).status_code == 202
    moved_job = (await job_of(api.db, source, moved))["id"]

    await publish(infra, UserMerged(userId=target.id, sourceUserId=source.id))
    await eventually(lambda: api.db.rows("SELECT 1 FROM users WHERE user_id = :u AND deleted", u=source.id))
    assert await api.db.scalar("SELECT count(*) FROM bookmark_enrichments WHERE user_id = :u", u=source.id) == 0
    assert (await job_of(api.db, target, moved))["id"] == moved_job
    assert (await job_of(api.db, target, clash))["normalized_url"] == target_url  # the target's own won
    assert (await api.db.one("SELECT charged_user_id FROM jobs WHERE id = :id", id=moved_job))[
        "charged_user_id"
    ] == target.id
    assert (await api.status(target, moved)).json()["data"]["status"] == "pending"
