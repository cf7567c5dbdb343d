"""Writes to the enrichment database.

Lock order, followed everywhere so that concurrent use cases cannot deadlock:
``user_quotas`` (one user's enqueue lock) → ``jobs`` → ``bookmark_enrichments`` (ordered by key) →
``results_cache`` / ``snapshots`` → ``user_tags`` (ordered by key).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import RowMapping, text
from sqlalchemy.ext.asyncio import AsyncSession

from common.outbox import forget_published_events
from common.tracing import current_trace_headers
from enrichment.domain.model import CapturedPage

_IN_FLIGHT = "('pending', 'processing', 'retrying')"

# --- enqueue -----------------------------------------------------------------------------------------


async def lock_user_quota(session: AsyncSession, user_id: uuid.UUID, month: date) -> int:
    """Lock the user's quota row until commit (creating it, or rolling it to ``month``); return the
    job creations charged in ``month`` so far. Every enqueue of the user queues on this lock."""
    result = await session.execute(
        text(
            """
            INSERT INTO user_quotas AS q (user_id, month, month_used) VALUES (:u, :m, 0)
            ON CONFLICT (user_id) DO UPDATE
              SET month = EXCLUDED.month,
                  month_used = CASE WHEN q.month = EXCLUDED.month THEN q.month_used ELSE 0 END,
                  updated_at = now()
            RETURNING month_used
            """
        ),
        {"u": user_id, "m": month},
    )
    return int(result.scalar_one())


async def lock_existing_quota(session: AsyncSession, user_id: uuid.UUID) -> None:
    """Wait for the user's enqueue in progress (if any) before purging, so it cannot write after us."""
    await session.execute(text("SELECT 1 FROM user_quotas WHERE user_id = :u FOR UPDATE"), {"u": user_id})


async def recent_charges(session: AsyncSession, user_id: uuid.UUID, since: datetime) -> list[datetime]:
    result = await session.execute(
        text("SELECT charged_at FROM quota_charges WHERE user_id = :u AND charged_at > :since"),
        {"u": user_id, "since": since},
    )
    return [row.charged_at for row in result]


async def charge(
    session: AsyncSession, user_id: uuid.UUID, job_id: uuid.UUID, at: datetime, window_start: datetime
) -> None:
    """Count one job creation against the month and the rolling minute (caller holds the quota lock)."""
    await session.execute(
        text("INSERT INTO quota_charges (user_id, charged_at, job_id) VALUES (:u, :t, :j)"),
        {"u": user_id, "t": at, "j": job_id},
    )
    # Charges that left the window are never read again; dropping them here keeps the table tiny.
    await session.execute(
        text("DELETE FROM quota_charges WHERE user_id = :u AND charged_at <= :w"), {"u": user_id, "w": window_start}
    )
    await session.execute(
        text("UPDATE user_quotas SET month_used = month_used + 1, updated_at = now() WHERE user_id = :u"),
        {"u": user_id},
    )


async def lock_job(session: AsyncSession, job_id: uuid.UUID) -> RowMapping | None:
    """Share-lock a job before attaching a bookmark to it.

    A worker ending the job updates the row, which conflicts with this lock: either the attach commits
    first and the worker's fan-out sees the bookmark, or the worker commits first and we see the final
    status here. No status filter in the query, so a job that just ended is returned, not skipped.
    """
    result = await session.execute(text("SELECT * FROM jobs WHERE id = :id FOR SHARE"), {"id": job_id})
    return result.mappings().first()


async def in_flight_job_for_url(session: AsyncSession, normalized_url: str) -> RowMapping | None:
    """The URL's in-flight shared job (a captured job is its user's own and never found here)."""
    result = await session.execute(
        text(
            f"SELECT * FROM jobs WHERE normalized_url = :n AND status IN {_IN_FLIGHT} "  # noqa: S608
            "AND private_for IS NULL FOR SHARE"
        ),
        {"n": normalized_url},
    )
    return result.mappings().first()


async def insert_job(
    session: AsyncSession,
    *,
    job_id: uuid.UUID,
    normalized_url: str,
    url: str,
    charged_user_id: uuid.UUID,
    priority: int = 0,
) -> RowMapping | None:
    """Create a pending job, or return None when another job for the URL is in flight (unique index).

    ``priority``: 0 for an interactive enqueue, 1 for bulk (import) work, claimed only when no 0 is due."""
    result = await session.execute(
        text(
            f"""
            INSERT INTO jobs (id, normalized_url, url, charged_user_id, status, next_attempt_at, trace_context,
                              priority)
            VALUES (:id, :n, :url, :u, 'pending', now(), CAST(:trace AS jsonb), :priority)
            ON CONFLICT (normalized_url) WHERE status IN {_IN_FLIGHT} AND private_for IS NULL DO NOTHING
            RETURNING *
            """  # noqa: S608 - constant fragment
        ),
        {
            "id": job_id,
            "n": normalized_url,
            "url": url,
            "u": charged_user_id,
            "trace": json.dumps(current_trace_headers()),
            "priority": priority,
        },
    )
    return result.mappings().first()


async def insert_private_job(
    session: AsyncSession,
    *,
    job_id: uuid.UUID,
    normalized_url: str,
    url: str,
    user_id: uuid.UUID,
    page: CapturedPage,
) -> RowMapping:
    """Create a pending job that analyses ``html`` (UTF-8) captured by ``user_id``, never fetching the URL."""
    result = await session.execute(
        text(
            """
            INSERT INTO jobs (id, normalized_url, url, charged_user_id, private_for, status, next_attempt_at,
                              trace_context)
            VALUES (:id, :n, :url, :u, :u, 'pending', now(), CAST(:trace AS jsonb))
            RETURNING *
            """
        ),
        {"id": job_id, "n": normalized_url, "url": url, "u": user_id, "trace": json.dumps(current_trace_headers())},
    )
    job = result.mappings().one()
    await replace_captured_page(session, job_id=job_id, user_id=user_id, page=page)
    return job


async def replace_captured_page(
    session: AsyncSession, *, job_id: uuid.UUID, user_id: uuid.UUID, page: CapturedPage
) -> None:
    """Store (or replace) the page a private job reads at its next attempt."""
    await session.execute(
        text(
            """
            INSERT INTO captured_pages (job_id, user_id, html, title, size_bytes) VALUES (:j, :u, :h, :t, :size)
            ON CONFLICT (job_id) DO UPDATE SET html = EXCLUDED.html, title = EXCLUDED.title,
                                               size_bytes = EXCLUDED.size_bytes, created_at = now()
            """
        ),
        {"j": job_id, "u": user_id, "h": page.html, "t": page.title, "size": len(page.html)},
    )


async def delete_captured_page(session: AsyncSession, job_id: uuid.UUID) -> None:
    """The job ended: its captured HTML is not needed any more (the sanitized snapshot stays)."""
    await session.execute(text("DELETE FROM captured_pages WHERE job_id = :j"), {"j": job_id})


async def upsert_enrichment(
    session: AsyncSession,
    *,
    user_id: uuid.UUID,
    client_bookmark_id: str,
    normalized_url: str,
    job_id: uuid.UUID | None,
    status: str,
    result: dict[str, Any] | None = None,
    cache_hit: bool = False,
    client_saved_at: datetime | None = None,
    enriched_at: datetime | None = None,
) -> None:
    await session.execute(
        text(
            """
            INSERT INTO bookmark_enrichments AS be
              (user_id, client_bookmark_id, normalized_url, job_id, status, error_code, result, cache_hit,
               client_saved_at, enriched_at)
            VALUES (:u, :b, :n, :j, :s, NULL, CAST(:r AS jsonb), :c, :saved, :enriched)
            ON CONFLICT (user_id, client_bookmark_id) DO UPDATE
              SET normalized_url = EXCLUDED.normalized_url, job_id = EXCLUDED.job_id, status = EXCLUDED.status,
                  error_code = NULL, result = EXCLUDED.result, cache_hit = EXCLUDED.cache_hit,
                  client_saved_at = COALESCE(EXCLUDED.client_saved_at, be.client_saved_at),
                  enriched_at = EXCLUDED.enriched_at, updated_at = now()
            """
        ),
        {
            "u": user_id,
            "b": client_bookmark_id,
            "n": normalized_url,
            "j": job_id,
            "s": status,
            "r": json.dumps(result) if result is not None else None,
            "c": cache_hit,
            "saved": client_saved_at,
            "enriched": enriched_at,
        },
    )


async def add_user_tags(session: AsyncSession, user_id: uuid.UUID, tags: Sequence[str]) -> None:
    if not tags:
        return
    await session.execute(
        text(
            """
            INSERT INTO user_tags AS t (user_id, tag) VALUES (:u, :tag)
            ON CONFLICT (user_id, tag) DO UPDATE SET uses = t.uses + 1, last_used_at = now()
            """
        ),
        [{"u": user_id, "tag": tag} for tag in sorted(set(tags))],
    )


# --- worker ------------------------------------------------------------------------------------------


async def next_due_job(session: AsyncSession) -> RowMapping | None:
    """Lock the job that has waited longest for a worker; jobs other workers hold are skipped, not waited on."""
    result = await session.execute(
        text(
            f"SELECT * FROM jobs WHERE status IN {_IN_FLIGHT} AND next_attempt_at <= now() "  # noqa: S608
            "ORDER BY priority, next_attempt_at LIMIT 1 FOR UPDATE SKIP LOCKED"
        )
    )
    return result.mappings().first()


async def start_attempt(
    session: AsyncSession, job_id: uuid.UUID, *, worker_id: str, lease_seconds: float, after_crash: bool = False
) -> RowMapping:
    """Claim the job; ``after_crash``: its previous claim's lease ran out (counted in ``crashes``)."""
    result = await session.execute(
        text(
            """
            UPDATE jobs SET status = 'processing', attempts = attempts + 1, worker_id = :w,
                   crashes = crashes + CASE WHEN :crashed THEN 1 ELSE 0 END,
                   lease_until = now() + make_interval(secs => :lease),
                   next_attempt_at = now() + make_interval(secs => :lease), updated_at = now()
            WHERE id = :id RETURNING *
            """
        ),
        {"id": job_id, "w": worker_id, "lease": lease_seconds, "crashed": after_crash},
    )
    return result.mappings().one()


async def extend_lease(
    session: AsyncSession, job_id: uuid.UUID, *, worker_id: str, attempts: int, lease_seconds: float
) -> bool:
    result = await session.execute(
        text(
            """
            UPDATE jobs SET lease_until = now() + make_interval(secs => :lease),
                   next_attempt_at = now() + make_interval(secs => :lease)
            WHERE id = :id AND worker_id = :w AND attempts = :a AND status = 'processing'
            """
        ),
        {"id": job_id, "w": worker_id, "a": attempts, "lease": lease_seconds},
    )
    return (result.rowcount or 0) > 0  # type: ignore[attr-defined]


async def end_attempt(
    session: AsyncSession,
    job_id: uuid.UUID,
    *,
    worker_id: str | None,
    attempts: int,
    status: str,
    error_code: str | None,
    retry_in_seconds: float = 0.0,
    release: bool = False,
    crashed: bool = False,
) -> RowMapping | None:
    """Move a processing job out of ``processing``, fenced by (worker, attempt): a worker whose lease was
    taken over gets None and must drop its work. ``worker_id=None`` ends an abandoned job (lease expired;
    ``crashed`` counts that expiry in ``crashes``). ``release`` hands the attempt back uncounted
    (graceful shutdown)."""
    owner = "worker_id = :w" if worker_id is not None else "lease_until <= now()"
    result = await session.execute(
        text(
            f"""
            UPDATE jobs SET status = :s, error_code = CASE WHEN :release THEN error_code ELSE :e END,
                   worker_id = NULL, lease_until = NULL,
                   attempts = attempts - CASE WHEN :release THEN 1 ELSE 0 END,
                   crashes = crashes + CASE WHEN :crashed THEN 1 ELSE 0 END,
                   next_attempt_at = now() + make_interval(secs => :delay), updated_at = now()
            WHERE id = :id AND attempts = :a AND status = 'processing' AND {owner}
            RETURNING *
            """  # noqa: S608 - the fragment is one of two constants
        ),
        {
            "id": job_id,
            "w": worker_id,
            "a": attempts,
            "s": status,
            "e": error_code,
            "delay": retry_in_seconds,
            "release": release,
            "crashed": crashed,
        },
    )
    return result.mappings().first()


async def attached_for_update(session: AsyncSession, job_id: uuid.UUID) -> list[RowMapping]:
    result = await session.execute(
        text("SELECT * FROM bookmark_enrichments WHERE job_id = :j ORDER BY user_id, client_bookmark_id FOR UPDATE"),
        {"j": job_id},
    )
    return list(result.mappings())


async def finish_attached(
    session: AsyncSession,
    job_id: uuid.UUID,
    *,
    status: str,
    error_code: str | None,
    result: dict[str, Any] | None,
    enriched_at: datetime | None,
) -> None:
    """Record the job's end on every bookmark waiting for it (the job id stays, for tracing)."""
    await session.execute(
        text(
            """
            UPDATE bookmark_enrichments
               SET status = :s, error_code = :e, result = CAST(:r AS jsonb), enriched_at = :t, cache_hit = false,
                   updated_at = now()
             WHERE job_id = :j
            """
        ),
        {
            "j": job_id,
            "s": status,
            "e": error_code,
            "r": json.dumps(result) if result is not None else None,
            "t": enriched_at,
        },
    )


async def store_cache(
    session: AsyncSession, normalized_url: str, result: dict[str, Any], *, job_id: uuid.UUID, ttl_seconds: int
) -> None:
    await session.execute(
        text(
            """
            INSERT INTO results_cache (normalized_url, result, job_id, created_at, expires_at)
            VALUES (:n, CAST(:r AS jsonb), :j, now(), now() + make_interval(secs => :ttl))
            ON CONFLICT (normalized_url) DO UPDATE
              SET result = EXCLUDED.result, job_id = EXCLUDED.job_id, created_at = EXCLUDED.created_at,
                  expires_at = EXCLUDED.expires_at
            """
        ),
        {"n": normalized_url, "r": json.dumps(result), "j": job_id, "ttl": float(ttl_seconds)},
    )


async def replace_snapshots(
    session: AsyncSession, normalized_url: str, job_id: uuid.UUID, snapshots: Sequence[tuple[str, str, bytes]]
) -> None:
    """Replace the URL's captures with this job's ``(kind, content_type, data)``; kinds it did not take
    are dropped so that an old screenshot never sits next to newer HTML."""
    await session.execute(text("DELETE FROM snapshots WHERE normalized_url = :n"), {"n": normalized_url})
    if not snapshots:
        return
    await session.execute(
        text(
            "INSERT INTO snapshots (normalized_url, kind, content_type, data, size_bytes, job_id) "
            "VALUES (:n, :k, :ct, :d, :size, :j)"
        ),
        [
            {"n": normalized_url, "k": kind, "ct": content_type, "d": data, "size": len(data), "j": job_id}
            for kind, content_type, data in snapshots
        ],
    )


async def replace_private_snapshots(
    session: AsyncSession,
    attached: Sequence[RowMapping],
    job_id: uuid.UUID,
    snapshots: Sequence[tuple[str, str, bytes]],
) -> None:
    """Give each attached bookmark (of the capturing user) this job's captures, replacing its older ones."""
    await drop_private_snapshots(session, attached)
    rows = [
        {
            "u": row["user_id"],
            "b": row["client_bookmark_id"],
            "n": row["normalized_url"],
            "k": kind,
            "ct": content_type,
            "d": data,
            "size": len(data),
            "j": job_id,
        }
        for row in attached
        for kind, content_type, data in snapshots
    ]
    if rows:
        await session.execute(
            text(
                "INSERT INTO private_snapshots (user_id, client_bookmark_id, normalized_url, kind, content_type, "
                "data, size_bytes, job_id) VALUES (:u, :b, :n, :k, :ct, :d, :size, :j)"
            ),
            rows,
        )


async def drop_private_snapshots(session: AsyncSession, attached: Sequence[RowMapping]) -> None:
    """Forget the private captures of these bookmarks (a newer enrichment replaces them)."""
    keys = [{"u": row["user_id"], "b": row["client_bookmark_id"]} for row in attached]
    if keys:
        await session.execute(
            text("DELETE FROM private_snapshots WHERE user_id = :u AND client_bookmark_id = :b"), keys
        )


async def delete_private_snapshots_of_deleted_bookmarks(session: AsyncSession, *, limit: int = 1000) -> int:
    """A deleted bookmark's captured page goes with it: its private captures serve nobody any more."""
    result = await session.execute(
        text(
            """
            DELETE FROM private_snapshots WHERE ctid IN (
              SELECT p.ctid FROM private_snapshots p
              JOIN bookmark_urls b ON b.user_id = p.user_id AND b.client_bookmark_id = p.client_bookmark_id
              WHERE b.deleted LIMIT :n)
            """
        ),
        {"n": limit},
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def delete_finished_jobs(session: AsyncSession, *, older_than_seconds: int, limit: int = 1000) -> int:
    """Forget ended jobs after the retention time; their results live on in the cache and on bookmarks."""
    result = await session.execute(
        text(
            """
            DELETE FROM jobs WHERE id IN (
              SELECT id FROM jobs WHERE status IN ('completed', 'failed')
                AND updated_at < now() - make_interval(secs => :age)
              ORDER BY updated_at LIMIT :n FOR UPDATE SKIP LOCKED)
            """
        ),
        {"age": float(older_than_seconds), "n": limit},
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def delete_expired_cache(session: AsyncSession, *, limit: int = 1000) -> int:
    """Drop expired cache rows, and the captures of URLs that neither the cache nor any bookmark needs."""
    result = await session.execute(
        text(
            "DELETE FROM results_cache WHERE normalized_url IN (SELECT normalized_url FROM results_cache "
            "WHERE expires_at <= now() ORDER BY expires_at LIMIT :n FOR UPDATE SKIP LOCKED)"
        ),
        {"n": limit},
    )
    await session.execute(
        text(
            """
            DELETE FROM snapshots s WHERE s.normalized_url IN (
              SELECT DISTINCT s2.normalized_url FROM snapshots s2
              WHERE NOT EXISTS (SELECT 1 FROM results_cache c WHERE c.normalized_url = s2.normalized_url)
                AND NOT EXISTS (SELECT 1 FROM bookmark_enrichments be WHERE be.normalized_url = s2.normalized_url)
              LIMIT :n)
            """
        ),
        {"n": limit},
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


# --- projections and account lifecycle ---------------------------------------------------------------


async def upsert_user(
    session: AsyncSession, user_id: uuid.UUID, *, use_ai: bool, is_pro: bool, event_at: datetime
) -> None:
    """Record the user's plan and consent, unless the user is gone or a newer event was applied."""
    await session.execute(
        text(
            """
            INSERT INTO users AS u (user_id, use_ai, is_pro, event_at) VALUES (:u, :ai, :pro, :t)
            ON CONFLICT (user_id) DO UPDATE
              SET use_ai = EXCLUDED.use_ai, is_pro = EXCLUDED.is_pro, event_at = EXCLUDED.event_at,
                  updated_at = now()
              WHERE NOT u.deleted AND (u.event_at IS NULL OR u.event_at <= EXCLUDED.event_at)
            """
        ),
        {"u": user_id, "ai": use_ai, "pro": is_pro, "t": event_at},
    )


# A bookmark change applies unless a later one (by the bookmark's own stream position) was applied, so
# changes of one bookmark may be applied in any order, and several in one executemany.
_UPSERT_BOOKMARK_URL = text(
    """
    INSERT INTO bookmark_urls AS b (user_id, client_bookmark_id, normalized_url, deleted, position)
    VALUES (:u, :b, :n, :d, :p)
    ON CONFLICT (user_id, client_bookmark_id) DO UPDATE
      SET normalized_url = CASE WHEN EXCLUDED.normalized_url = '' THEN b.normalized_url
                                ELSE EXCLUDED.normalized_url END,
          deleted = EXCLUDED.deleted, position = EXCLUDED.position
      WHERE b.position < EXCLUDED.position
    """
)


def bookmark_url_row(
    user_id: uuid.UUID, client_bookmark_id: str, *, normalized_url: str, deleted: bool, position: datetime
) -> dict[str, Any]:
    return {"u": user_id, "b": client_bookmark_id, "n": normalized_url, "d": deleted, "p": position}


async def upsert_bookmark_urls(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Apply bookmark changes (rows from :func:`bookmark_url_row`) in one executemany."""
    if rows:
        await session.execute(_UPSERT_BOOKMARK_URL, list(rows))


async def lock_jobs_of_user(session: AsyncSession, user_id: uuid.UUID) -> list[uuid.UUID]:
    """Lock (in id order) every job the user's bookmarks wait on or that was charged to the user."""
    result = await session.execute(
        text(
            """
            SELECT id FROM jobs WHERE id IN (
              SELECT job_id FROM bookmark_enrichments WHERE user_id = :u AND job_id IS NOT NULL
              UNION SELECT id FROM jobs WHERE charged_user_id = :u)
            ORDER BY id FOR UPDATE
            """
        ),
        {"u": user_id},
    )
    return [row.id for row in result]


async def purge_user(session: AsyncSession, user_id: uuid.UUID, job_ids: Sequence[uuid.UUID]) -> None:
    """Delete everything of the user; jobs still wanted by other users' bookmarks keep running,
    no longer linked to this user. Shared results (cache, snapshots) stay: they belong to the URL."""
    await session.execute(
        text("SELECT 1 FROM bookmark_enrichments WHERE user_id = :u ORDER BY client_bookmark_id FOR UPDATE"),
        {"u": user_id},
    )
    for table in (
        "bookmark_enrichments",
        "quota_charges",
        "user_quotas",
        "bookmark_urls",
        "user_tags",
        "private_snapshots",
        "captured_pages",
    ):
        await session.execute(text(f"DELETE FROM {table} WHERE user_id = :u"), {"u": user_id})  # noqa: S608
    await forget_published_events(session, key=str(user_id))
    if job_ids:
        await session.execute(
            text(
                "DELETE FROM jobs j WHERE j.id = ANY(:ids) "
                "AND NOT EXISTS (SELECT 1 FROM bookmark_enrichments be WHERE be.job_id = j.id)"
            ),
            {"ids": list(job_ids)},
        )
    await session.execute(text("UPDATE jobs SET charged_user_id = NULL WHERE charged_user_id = :u"), {"u": user_id})
    await session.execute(
        text(
            """
            INSERT INTO users (user_id, use_ai, is_pro, deleted) VALUES (:u, false, false, true)
            ON CONFLICT (user_id) DO UPDATE SET use_ai = false, is_pro = false, deleted = true, updated_at = now()
            """
        ),
        {"u": user_id},
    )


async def move_user_data(session: AsyncSession, *, source: uuid.UUID, target: uuid.UUID) -> None:
    """Give the target the source's bookmarks' enrichments and projections (the target's own win),
    its tag vocabulary, and the accounting of the source's jobs."""
    await session.execute(
        text(
            """
            UPDATE bookmark_enrichments s SET user_id = :t, updated_at = now()
            WHERE s.user_id = :s AND NOT EXISTS (
              SELECT 1 FROM bookmark_enrichments t WHERE t.user_id = :t AND t.client_bookmark_id = s.client_bookmark_id)
            """
        ),
        {"s": source, "t": target},
    )
    await session.execute(
        text(
            """
            UPDATE bookmark_urls s SET user_id = :t
            WHERE s.user_id = :s AND NOT EXISTS (
              SELECT 1 FROM bookmark_urls t WHERE t.user_id = :t AND t.client_bookmark_id = s.client_bookmark_id)
            """
        ),
        {"s": source, "t": target},
    )
    await session.execute(
        text(
            """
            INSERT INTO user_tags AS t (user_id, tag, uses, last_used_at)
            SELECT :t, tag, uses, last_used_at FROM user_tags WHERE user_id = :s ORDER BY tag
            ON CONFLICT (user_id, tag) DO UPDATE
              SET uses = t.uses + EXCLUDED.uses, last_used_at = GREATEST(t.last_used_at, EXCLUDED.last_used_at)
            """
        ),
        {"s": source, "t": target},
    )
    await session.execute(
        text(
            """
            UPDATE private_snapshots s SET user_id = :t
            WHERE s.user_id = :s AND NOT EXISTS (
              SELECT 1 FROM private_snapshots t WHERE t.user_id = :t AND t.client_bookmark_id = s.client_bookmark_id)
            """
        ),
        {"s": source, "t": target},
    )
    await session.execute(text("UPDATE captured_pages SET user_id = :t WHERE user_id = :s"), {"s": source, "t": target})
    await session.execute(
        text("UPDATE jobs SET charged_user_id = :t WHERE charged_user_id = :s"), {"s": source, "t": target}
    )
    await session.execute(text("UPDATE jobs SET private_for = :t WHERE private_for = :s"), {"s": source, "t": target})
