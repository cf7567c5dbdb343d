"""Enrichment use cases: each is one transaction that changes state and writes its events together.

Three callers: the API (enqueue, status, snapshot), the worker (claim, heartbeat, complete, fail,
release, housekeeping) and the event consumers (projections, account deletion and merge).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import RowMapping
from sqlalchemy.ext.asyncio import AsyncSession

from common.db import SessionFactory, transaction
from common.errors import ConsentRequired, InvalidUrl, QuotaExceeded, Unavailable
from common.events import (
    BookmarkDeleted,
    BookmarkSaved,
    EnrichmentCompleted,
    EnrichmentFailed,
    EnrichmentResult,
    Event,
    UserUpdated,
)
from common.outbox import add_events
from common.urls import InvalidUrlError, NormalizedUrl, normalize_url
from enrichment.domain.errors import EnrichmentNotFound, SnapshotNotFound, UserGone
from enrichment.domain.model import (
    BULK_PRIORITY,
    COMPLETED,
    FAILED,
    IN_FLIGHT,
    MINUTE_WINDOW,
    PENDING,
    PROCESSING,
    RETRYING,
    CapturedPage,
    Clock,
    Entitlements,
    QuotaUse,
    check_quota,
    crashes_exhausted,
    import_action,
    month_of,
    public_result,
    quota_use,
    retry_delay,
)
from enrichment.entitlements import EntitlementsClient
from enrichment.links import store as links_store
from enrichment.metrics import CACHE_LOOKUPS, JOB_TRANSITIONS, QUOTA_REJECTIONS
from enrichment.previews import store as previews_store
from enrichment.previews.images import EncodedImage
from enrichment.store import queries, repository

# A job whose workers kept dying on it (lease expiries: process killed, Chromium OOM-killed, node lost)
# ends with this code once ENRICHMENT_MAX_WORKER_CRASHES is reached. A crash is not an attempt failure
# of the site, so it neither uses up the site's retries nor reports a site error.
WORKER_CRASHED_ERROR_CODE = "worker-crashed"


@dataclass(frozen=True, slots=True)
class EnqueueOutcome:
    """``cache_hit``: a result was applied at once (200); otherwise a job runs (202) with ``status``."""

    cache_hit: bool
    status: str
    charged: bool = False


@dataclass(frozen=True, slots=True)
class StatusView:
    client_bookmark_id: str
    status: str
    result: dict[str, Any] | None
    error_code: str | None


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    id: uuid.UUID
    url: str
    normalized_url: str
    attempts: int  # claims so far, this one included: the fencing token of every write of the attempt
    existing_tags: list[str]
    trace_context: dict[str, str] = field(default_factory=dict)
    crashes: int = 0  # earlier claims that ended in a lease expiry
    # A captured job: the user whose browser sent the page, and that page (never fetched, never shared).
    private_for: uuid.UUID | None = None
    captured: CapturedPage | None = None

    @property
    def site_attempt(self) -> int:
        """Which attempt at the site this is (crashed claims not counted): drives the retry schedule."""
        return self.attempts - self.crashes


@dataclass(frozen=True, slots=True)
class Snapshot:
    kind: str
    content_type: str
    data: bytes


# --- API ---------------------------------------------------------------------------------------------


async def resolve_entitlements(
    *, sessions: SessionFactory, client: EntitlementsClient | None, user_id: uuid.UUID
) -> Entitlements:
    """Ask auth (read-your-writes); fall back to the ``user.updated`` projection when it cannot answer."""
    answer = await client.fetch(user_id) if client is not None else None
    if answer is not None:
        return answer
    async with sessions() as session:
        row = await queries.user_projection(session, user_id)
    if row is None:
        # Never heard of: consent is opt-in (docs/api-guide.md, section 9), so nothing is enabled yet.
        return Entitlements(exists=True, use_ai=False, is_pro=False)
    return Entitlements(exists=not row["deleted"], use_ai=bool(row["use_ai"]), is_pro=bool(row["is_pro"]))


def _admitted_url(entitlements: Entitlements, url: str) -> NormalizedUrl:
    """The URL of an enqueue or a capture, normalized, once the user exists and consents to AI enrichment."""
    if not entitlements.exists:
        raise UserGone()
    if not entitlements.use_ai:
        raise ConsentRequired()
    try:
        return normalize_url(url)
    except InvalidUrlError as exc:
        raise InvalidUrl(str(exc)) from exc


async def enqueue(
    *,
    sessions: SessionFactory,
    user_id: uuid.UUID,
    client_bookmark_id: str,
    url: str,
    client_saved_at: datetime | None,
    entitlements: Entitlements,
    clock: Clock,
) -> EnqueueOutcome:
    """Queue enrichment of a bookmark: consent, URL, cache, duplicate, existing job, quota, new job."""
    normalized = _admitted_url(entitlements, url)
    now = clock.now()
    async with transaction(sessions) as session:
        month_used = await repository.lock_user_quota(session, user_id, month_of(now))
        if await queries.is_user_deleted(session, user_id):
            raise UserGone()
        target = _Target(session, user_id, client_bookmark_id, normalized.url, client_saved_at)

        cached = await queries.cached_result(session, normalized.url)
        CACHE_LOOKUPS.labels("hit" if cached is not None else "miss").inc()
        if cached is not None:
            return await target.apply_result(cached)

        duplicate = await queries.reusable_duplicate(session, user_id, normalized.url, client_bookmark_id)
        if duplicate is not None:
            if duplicate["status"] == COMPLETED and duplicate["result"] is not None:
                return await target.apply_result(dict(duplicate["result"]))
            outcome = await target.attach(duplicate["job_id"])
            if outcome is not None:
                return outcome

        current = await queries.enrichment(session, user_id, client_bookmark_id)
        if current is not None and current["job_id"] is not None and current["normalized_url"] == normalized.url:
            outcome = await target.attach(current["job_id"])
            if outcome is not None:
                return outcome

        in_flight = await repository.in_flight_job_for_url(session, normalized.url)
        outcome = await target.attach_locked(in_flight) if in_flight is not None else None
        if outcome is not None:
            return outcome

        await _check_quota(session, user_id, entitlements, now=now, month_used=month_used)
        job = await repository.insert_job(
            session, job_id=uuid.uuid4(), normalized_url=normalized.url, url=url, charged_user_id=user_id
        )
        if job is None:
            # Another user's enqueue created this URL's job after our check; the unique index made us
            # wait for it to commit, so it is visible now. Attach, like any in-flight job.
            in_flight = await repository.in_flight_job_for_url(session, normalized.url)
            outcome = await target.attach_locked(in_flight) if in_flight is not None else None
            if outcome is None:  # that job also ended already: vanishingly rare, and a retry resolves it
                raise Unavailable("The enrichment job for this URL changed state meanwhile.", retry_after_seconds=1)
            return outcome
        if not entitlements.is_pro:
            await repository.charge(session, user_id, job["id"], now, now - MINUTE_WINDOW)
        await target.record(job_id=job["id"], status=PENDING)
    JOB_TRANSITIONS.labels(PENDING).inc()
    return EnqueueOutcome(cache_hit=False, status=PENDING, charged=not entitlements.is_pro)


async def _check_quota(
    session: AsyncSession, user_id: uuid.UUID, entitlements: Entitlements, *, now: datetime, month_used: int
) -> None:
    """QuotaExceeded when a free user may not create another job now (the caller holds the quota lock)."""
    if entitlements.is_pro:
        return
    recent = await repository.recent_charges(session, user_id, now - MINUTE_WINDOW)
    rejection = check_quota(now=now, month_used=month_used, recent_charges=recent)
    if rejection is not None:
        QUOTA_REJECTIONS.labels(rejection.kind).inc()
        raise QuotaExceeded(rejection.message, retry_after_seconds=rejection.retry_after_seconds)


async def capture(
    *,
    sessions: SessionFactory,
    user_id: uuid.UUID,
    client_bookmark_id: str,
    url: str,
    page: CapturedPage,
    entitlements: Entitlements,
    clock: Clock,
) -> EnqueueOutcome:
    """Queue enrichment of a bookmark from the page its user's browser rendered.

    Checked like an enqueue (consent, URL, quota), but private: no cache is read or filled, no other
    bookmark's job is joined, and the URL is never fetched. A capture while the bookmark's previous
    capture still waits replaces the HTML that job reads, uncharged.
    """
    normalized = _admitted_url(entitlements, url)
    now = clock.now()
    async with transaction(sessions) as session:
        month_used = await repository.lock_user_quota(session, user_id, month_of(now))
        if await queries.is_user_deleted(session, user_id):
            raise UserGone()
        waiting = await _waiting_capture(session, user_id, client_bookmark_id, normalized.url)
        if waiting is not None:
            await repository.replace_captured_page(session, job_id=waiting["id"], user_id=user_id, page=page)
            return EnqueueOutcome(cache_hit=False, status=waiting["status"])
        await _check_quota(session, user_id, entitlements, now=now, month_used=month_used)
        job = await repository.insert_private_job(
            session, job_id=uuid.uuid4(), normalized_url=normalized.url, url=url, user_id=user_id, page=page
        )
        if not entitlements.is_pro:
            await repository.charge(session, user_id, job["id"], now, now - MINUTE_WINDOW)
        target = _Target(session, user_id, client_bookmark_id, normalized.url, None)
        await target.record(job_id=job["id"], status=PENDING)
    JOB_TRANSITIONS.labels(PENDING).inc()
    return EnqueueOutcome(cache_hit=False, status=PENDING, charged=not entitlements.is_pro)


async def _waiting_capture(
    session: AsyncSession, user_id: uuid.UUID, client_bookmark_id: str, normalized_url: str
) -> RowMapping | None:
    """The bookmark's own captured job of this URL while it is in flight, share-locked (so it cannot end
    meanwhile: a worker ending it waits for this transaction)."""
    current = await queries.enrichment(session, user_id, client_bookmark_id)
    if current is None or current["job_id"] is None:
        return None
    job = await repository.lock_job(session, current["job_id"])
    if job is None or job["private_for"] != user_id or job["normalized_url"] != normalized_url:
        return None
    return job if job["status"] in IN_FLIGHT else None


class _Target:
    """The bookmark an enqueue is about, inside the enqueue's transaction."""

    def __init__(
        self,
        session: AsyncSession,
        user_id: uuid.UUID,
        client_bookmark_id: str,
        normalized_url: str,
        client_saved_at: datetime | None,
    ) -> None:
        self.session = session
        self.user_id = user_id
        self.client_bookmark_id = client_bookmark_id
        self.normalized_url = normalized_url
        self.client_saved_at = client_saved_at

    async def record(
        self,
        *,
        job_id: uuid.UUID | None,
        status: str,
        result: dict[str, Any] | None = None,
        enriched_at: datetime | None = None,
    ) -> None:
        await repository.upsert_enrichment(
            self.session,
            user_id=self.user_id,
            client_bookmark_id=self.client_bookmark_id,
            normalized_url=self.normalized_url,
            job_id=job_id,
            status=status,
            result=result,
            cache_hit=result is not None,
            client_saved_at=self.client_saved_at,
            enriched_at=enriched_at,
        )

    async def apply_result(self, result: dict[str, Any]) -> EnqueueOutcome:
        """Apply an existing result now: recorded here and sent to bookmarks as a completed enrichment."""
        parsed = EnrichmentResult.model_validate(result)
        enriched_at = await queries.database_now(self.session)
        await self.record(job_id=None, status=COMPLETED, result=parsed.model_dump(mode="json"), enriched_at=enriched_at)
        await repository.add_user_tags(self.session, self.user_id, parsed.tags)
        await add_events(
            self.session,
            [
                EnrichmentCompleted(
                    userId=self.user_id,
                    clientBookmarkId=self.client_bookmark_id,
                    normalizedUrl=self.normalized_url,
                    result=parsed,
                    enrichedAt=enriched_at,
                    cacheHit=True,
                )
            ],
        )
        return EnqueueOutcome(cache_hit=True, status=COMPLETED)

    async def attach(self, job_id: uuid.UUID | None) -> EnqueueOutcome | None:
        """Wait on an existing job of this URL; None when it cannot be reused (gone, or ended badly)."""
        if job_id is None:
            return None
        job = await repository.lock_job(self.session, job_id)
        if job is None or job["normalized_url"] != self.normalized_url:
            return None
        return await self.attach_locked(job)

    async def attach_locked(self, job: RowMapping) -> EnqueueOutcome | None:
        if job["status"] in IN_FLIGHT:
            await self.record(job_id=job["id"], status=job["status"])
            return EnqueueOutcome(cache_hit=False, status=job["status"])
        if job["status"] == COMPLETED:
            # It ended while we looked; its result went to the cache in the same transaction.
            cached = await queries.cached_result(self.session, self.normalized_url)
            if cached is not None:
                return await self.apply_result(cached)
        return None


async def read_quota_use(*, sessions: SessionFactory, user_id: uuid.UUID, is_pro: bool, clock: Clock) -> QuotaUse:
    """The caller's enrichment quota use, from the same counter the enqueue check reads."""
    async with sessions() as session:
        row = await queries.quota_row(session, user_id)
    return quota_use(
        is_pro=is_pro,
        now=clock.now(),
        counted_month=row["month"] if row is not None else None,
        month_used=int(row["month_used"]) if row is not None else 0,
    )


async def enrichment_status(
    *, sessions: SessionFactory, user_id: uuid.UUID, client_bookmark_id: str, is_pro: bool
) -> StatusView:
    """The bookmark's job status and, once completed, its result (``saveWhy`` only for Pro)."""
    async with sessions() as session:
        row = await queries.enrichment(session, user_id, client_bookmark_id)
    if row is None:
        raise EnrichmentNotFound()
    live = row["job_status"] is not None and row["status"] in IN_FLIGHT
    status = row["job_status"] if live else row["status"]
    error_code = row["job_error_code"] if live else row["error_code"]
    result = None
    if status == COMPLETED and row["result"] is not None:
        result = public_result(row["result"], is_pro=is_pro)
    return StatusView(client_bookmark_id=client_bookmark_id, status=status, result=result, error_code=error_code)


async def read_snapshot(
    *, sessions: SessionFactory, user_id: uuid.UUID, client_bookmark_id: str, kind: str
) -> Snapshot:
    """A stored capture of the page of this user's bookmark."""
    async with sessions() as session:
        row = await queries.snapshot_for_bookmark(session, user_id, client_bookmark_id, kind)
    if row is None:
        raise SnapshotNotFound()
    return Snapshot(kind=kind, content_type=row["content_type"], data=bytes(row["data"]))


# --- worker ------------------------------------------------------------------------------------------


async def claim_job(
    *, sessions: SessionFactory, worker_id: str, lease_seconds: float, max_crashes: int
) -> ClaimedJob | None:
    """Take the longest-waiting due job under a lease, or None when nothing is due.

    A due job still ``processing`` is one whose worker's lease ran out (it crashed or hung): that claim
    counts as a crash, not as an attempt at the site; the ``max_crashes``-th crash ends the job.
    """
    while True:
        async with transaction(sessions) as session:
            row = await repository.next_due_job(session)
            if row is None:
                return None
            crashed = row["status"] == PROCESSING
            if crashed and crashes_exhausted(crashes=row["crashes"] + 1, max_crashes=max_crashes):
                await _fail_crashed(session, row)
                continue
            started = await repository.start_attempt(
                session, row["id"], worker_id=worker_id, lease_seconds=lease_seconds, after_crash=crashed
            )
            tag_owner = started["charged_user_id"] or await queries.first_attached_user(session, started["id"])
            tags = await queries.user_tags(session, tag_owner) if tag_owner is not None else []
            private_for = started["private_for"]
            captured = await queries.captured_page(session, started["id"]) if private_for is not None else None
        JOB_TRANSITIONS.labels(PROCESSING).inc()
        return ClaimedJob(
            id=started["id"],
            url=started["url"],
            normalized_url=started["normalized_url"],
            attempts=started["attempts"],
            existing_tags=tags,
            trace_context=dict(started["trace_context"] or {}),
            crashes=started["crashes"],
            private_for=private_for,
            captured=captured,
        )


async def _fail_crashed(session: AsyncSession, row: RowMapping) -> None:
    ended = await repository.end_attempt(
        session,
        row["id"],
        worker_id=None,
        attempts=row["attempts"],
        status=FAILED,
        error_code=WORKER_CRASHED_ERROR_CODE,
        crashed=True,
    )
    if ended is not None:
        await _fan_out_failure(session, ended, FAILED, WORKER_CRASHED_ERROR_CODE)
        JOB_TRANSITIONS.labels(FAILED).inc()


async def extend_lease(*, sessions: SessionFactory, job: ClaimedJob, worker_id: str, lease_seconds: float) -> bool:
    """Keep the job while working on it; False when the lease was lost (the attempt must be dropped)."""
    async with transaction(sessions) as session:
        return await repository.extend_lease(
            session, job.id, worker_id=worker_id, attempts=job.attempts, lease_seconds=lease_seconds
        )


async def complete_job(
    *,
    sessions: SessionFactory,
    job: ClaimedJob,
    worker_id: str,
    result: EnrichmentResult,
    snapshots: Sequence[Snapshot],
    cache_ttl_seconds: int,
    images: Sequence[EncodedImage] = (),
) -> bool:
    """Store the result (cache, captures) and hand it to every bookmark waiting on the job.

    False when the job is no longer ours (lease lost, or purged with its last bookmark's account).
    """
    payload = result.model_dump(mode="json")
    async with transaction(sessions) as session:
        ended = await repository.end_attempt(
            session, job.id, worker_id=worker_id, attempts=job.attempts, status=COMPLETED, error_code=None
        )
        if ended is None:
            return False
        captures = [(s.kind, s.content_type, s.data) for s in snapshots]
        for image in images:
            await previews_store.save_image(session, image)
        if job.private_for is None:
            await repository.store_cache(
                session, job.normalized_url, payload, job_id=job.id, ttl_seconds=cache_ttl_seconds
            )
            await repository.replace_snapshots(session, job.normalized_url, job.id, captures)
        attached = await repository.attached_for_update(session, job.id)
        if job.private_for is None:
            await repository.drop_private_snapshots(session, attached)
        else:
            # Only the capturing user's bookmarks ever wait on a private job (enqueues never join it).
            await repository.replace_private_snapshots(session, attached, job.id, captures)
            await repository.delete_captured_page(session, job.id)
        enriched_at = await queries.database_now(session)
        await repository.finish_attached(
            session, job.id, status=COMPLETED, error_code=None, result=payload, enriched_at=enriched_at
        )
        for user_id in sorted({row["user_id"] for row in attached}):
            await repository.add_user_tags(session, user_id, result.tags)
        events: list[Event] = [
            EnrichmentCompleted(
                userId=row["user_id"],
                clientBookmarkId=row["client_bookmark_id"],
                normalizedUrl=row["normalized_url"],
                result=result,
                enrichedAt=enriched_at,
            )
            for row in attached
        ]
        await add_events(session, events)
    JOB_TRANSITIONS.labels(COMPLETED).inc()
    return True


async def fail_attempt(
    *,
    sessions: SessionFactory,
    job: ClaimedJob,
    worker_id: str,
    error_code: str,
    retriable: bool,
    retry_delays: Sequence[float],
) -> str | None:
    """Schedule the next attempt (``retrying``) or end the job (``failed``); tell every waiting bookmark.

    Returns the new status, or None when the job is no longer ours.
    """
    delay = retry_delay(attempts=job.site_attempt, retriable=retriable, delays=retry_delays)
    status = RETRYING if delay is not None else FAILED
    async with transaction(sessions) as session:
        ended = await repository.end_attempt(
            session,
            job.id,
            worker_id=worker_id,
            attempts=job.attempts,
            status=status,
            error_code=error_code,
            retry_in_seconds=delay or 0.0,
        )
        if ended is None:
            return None
        await _fan_out_failure(session, ended, status, error_code)
    JOB_TRANSITIONS.labels(status).inc()
    return status


async def _fan_out_failure(session: AsyncSession, job: RowMapping, status: str, error_code: str) -> None:
    attached = await repository.attached_for_update(session, job["id"])
    if status == FAILED:
        await repository.delete_captured_page(session, job["id"])
        await repository.finish_attached(
            session, job["id"], status=FAILED, error_code=error_code, result=None, enriched_at=None
        )
    await add_events(
        session,
        [
            EnrichmentFailed(
                userId=row["user_id"],
                clientBookmarkId=row["client_bookmark_id"],
                normalizedUrl=row["normalized_url"],
                status=RETRYING if status == RETRYING else FAILED,
                errorCode=error_code,
            )
            for row in attached
        ],
    )


async def release_job(*, sessions: SessionFactory, job: ClaimedJob, worker_id: str) -> bool:
    """Give an interrupted attempt back uncounted (shutdown), due at once for another worker."""
    status = PENDING if job.site_attempt <= 1 else RETRYING
    async with transaction(sessions) as session:
        released = await repository.end_attempt(
            session, job.id, worker_id=worker_id, attempts=job.attempts, status=status, error_code=None, release=True
        )
    if released is not None:
        JOB_TRANSITIONS.labels(status).inc()
    return released is not None


@dataclass(frozen=True, slots=True)
class JobStats:
    counts: dict[str, int]
    oldest_due_wait_seconds: float


async def job_stats(*, sessions: SessionFactory) -> JobStats:
    async with sessions() as session:
        return JobStats(
            counts=await queries.job_counts(session),
            oldest_due_wait_seconds=await queries.oldest_due_wait_seconds(session),
        )


async def housekeeping(*, sessions: SessionFactory, job_retention_seconds: int) -> None:
    """Forget long-finished jobs, expired cache entries and previews, and deleted bookmarks' captured pages
    (bounded batches; runs periodically)."""
    async with transaction(sessions) as session:
        await repository.delete_finished_jobs(session, older_than_seconds=job_retention_seconds)
    async with transaction(sessions) as session:
        await repository.delete_expired_cache(session)
    async with transaction(sessions) as session:
        await previews_store.delete_expired(session, now=await queries.database_now(session))
    async with transaction(sessions) as session:
        await repository.delete_private_snapshots_of_deleted_bookmarks(session)


# --- events from other services (called inside the consumer's transaction) ---------------------------


async def apply_bookmarks_saved(session: AsyncSession, events: Sequence[BookmarkSaved]) -> None:
    """Saved bookmarks, a batch at a time: one statement reads which users are deleted, one executemany
    applies the projection (its position guard makes the order of one bookmark's changes irrelevant),
    then the bookmarks an import created get their enrichment (:func:`enrich_imported`)."""
    deleted = await _project(session, [_saved_row(event) for event in events])
    imported = [event for event in events if event.source == "import" and event.created]
    await enrich_imported(session, [event for event in imported if event.userId not in deleted])


def _saved_row(event: BookmarkSaved) -> dict[str, Any]:
    return repository.bookmark_url_row(
        event.userId,
        event.clientBookmarkId,
        normalized_url=event.normalizedUrl,
        deleted=False,
        position=event.updatedAt,
    )


def _deleted_row(event: BookmarkDeleted) -> dict[str, Any]:
    return repository.bookmark_url_row(
        event.userId,
        event.clientBookmarkId,
        normalized_url=event.normalizedUrl or "",
        deleted=True,
        position=event.deletedAt,
    )


async def _project(session: AsyncSession, rows: list[dict[str, Any]]) -> set[uuid.UUID]:
    """Apply projection rows (``repository.bookmark_url_row``) except those of deleted users (late events
    must not resurrect them); the deleted users left out."""
    deleted = await queries.deleted_users(session, {row["u"] for row in rows})
    await repository.upsert_bookmark_urls(session, [row for row in rows if row["u"] not in deleted])
    return deleted


async def apply_bookmark_saved(session: AsyncSession, event: BookmarkSaved) -> None:
    await apply_bookmarks_saved(session, [event])


async def enrich_imported(session: AsyncSession, events: Sequence[BookmarkSaved]) -> None:
    """Bookmarks an import created, in event order: the cached result at once, else bulk work for Pro
    users with useAi. What decides it (the bookmarks' enrichment rows, the users, the cached results) is
    read in three statements for the whole batch.

    Idempotent: a redelivered event finds the bookmark's enrichment row and does nothing more."""
    if not events:
        return
    enriched = await queries.enriched_bookmarks(session, [(e.userId, e.clientBookmarkId) for e in events])
    users = await queries.user_projections(session, {e.userId for e in events})
    cached = await queries.cached_results(session, {e.normalizedUrl for e in events})
    for event in events:
        if (event.userId, event.clientBookmarkId) in enriched:
            continue
        user, hit = users.get(event.userId), cached.get(event.normalizedUrl)
        action = import_action(
            known=user is not None,
            use_ai=bool(user and user["use_ai"]),
            is_pro=bool(user and user["is_pro"]),
            cached=hit is not None,
        )
        target = _Target(session, event.userId, event.clientBookmarkId, event.normalizedUrl, None)
        if action == "cache" and hit is not None:
            CACHE_LOOKUPS.labels("hit").inc()
            await target.apply_result(hit)
        elif action == "bulk":
            await _bulk_job(session, target, event.url)
        else:
            continue
        enriched.add((event.userId, event.clientBookmarkId))


async def _bulk_job(session: AsyncSession, target: _Target, url: str) -> None:
    """Attach to the URL's in-flight job, or create a low-priority one (Pro: nothing is charged)."""
    in_flight = await repository.in_flight_job_for_url(session, target.normalized_url)
    if in_flight is not None and await target.attach_locked(in_flight) is not None:
        return
    job = await repository.insert_job(
        session,
        job_id=uuid.uuid4(),
        normalized_url=target.normalized_url,
        url=url,
        charged_user_id=target.user_id,
        priority=BULK_PRIORITY,
    )
    if job is None:  # created meanwhile by another enqueue: wait on that one
        in_flight = await repository.in_flight_job_for_url(session, target.normalized_url)
        if in_flight is not None:
            await target.attach_locked(in_flight)
        return
    await target.record(job_id=job["id"], status=PENDING)
    JOB_TRANSITIONS.labels(PENDING).inc()


async def apply_bookmarks_deleted(session: AsyncSession, events: Sequence[BookmarkDeleted]) -> None:
    """:func:`apply_bookmark_deleted` for a batch, in two statements (see :func:`apply_bookmarks_saved`)."""
    await _project(session, [_deleted_row(event) for event in events])


async def apply_bookmark_deleted(session: AsyncSession, event: BookmarkDeleted) -> None:
    await _project(session, [_deleted_row(event)])


async def apply_user_updated(session: AsyncSession, event: UserUpdated) -> None:
    await repository.upsert_user(
        session, event.userId, use_ai=event.useAi, is_pro=event.isPro, event_at=event.occurredAt
    )


async def purge_user(session: AsyncSession, user_id: uuid.UUID) -> None:
    """Delete every row of the user; shared results (cache, captures) stay with their URL."""
    await repository.lock_existing_quota(session, user_id)
    job_ids = await repository.lock_jobs_of_user(session, user_id)
    await repository.purge_user(session, user_id, job_ids)
    await previews_store.forget_user(session, user_id)
    await links_store.forget_user(session, user_id)


async def merge_users(session: AsyncSession, *, source: uuid.UUID, target: uuid.UUID) -> None:
    """Move the source's enrichments (unless the target has that bookmark id) and tags, then purge it."""
    if source == target:
        return
    for user_id in sorted((source, target)):
        await repository.lock_existing_quota(session, user_id)
    job_ids = await repository.lock_jobs_of_user(session, source)
    if not await queries.is_user_deleted(session, target):
        await repository.move_user_data(session, source=source, target=target)
    await repository.purge_user(session, source, job_ids)
