"""Storage of link checks: the queue by normalized URL, the hosts' and the global rate's next free time,
the per-user minute counter of check-now requests, and the live bookmarks a result is sent to."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from enrichment.domain.links import Candidate, FailureKind, LinkState, LinkStatus


@dataclass(frozen=True, slots=True)
class Leased:
    normalized_url: str
    host: str
    claims: int
    state: LinkState


@dataclass(frozen=True, slots=True)
class LiveBookmark:
    user_id: uuid.UUID
    client_bookmark_id: str


@dataclass(frozen=True, slots=True)
class QueueStats:
    due: int
    oldest_due_seconds: float


async def unscheduled_urls(session: AsyncSession, *, limit: int) -> list[str]:
    """Normalized URLs of live bookmarks that have no check yet (at most ``limit``)."""
    found = await session.execute(
        text(
            "SELECT DISTINCT b.normalized_url FROM bookmark_urls b WHERE NOT b.deleted AND b.normalized_url <> '' "
            "AND NOT EXISTS (SELECT 1 FROM link_checks c WHERE c.normalized_url = b.normalized_url) LIMIT :limit"
        ),
        {"limit": limit},
    )
    return [str(url) for url in found.scalars()]


async def add_checks(session: AsyncSession, rows: Sequence[tuple[str, str, datetime]]) -> None:
    """Add checks ``(normalized_url, host, due_at)``; a URL that has one keeps it."""
    if not rows:
        return
    await session.execute(
        text(
            "INSERT INTO link_checks (normalized_url, host, due_at) VALUES (:url, :host, :due) "
            "ON CONFLICT (normalized_url) DO NOTHING"
        ),
        [{"url": url, "host": host, "due": due} for url, host, due in rows],
    )


async def check_now(session: AsyncSession, *, normalized_url: str, host: str, now: datetime) -> None:
    """Make the URL's check due at ``now`` (one in flight is left to finish)."""
    await session.execute(
        text(
            "INSERT INTO link_checks (normalized_url, host, due_at) VALUES (:url, :host, :now) "
            "ON CONFLICT (normalized_url) DO UPDATE SET due_at = LEAST(link_checks.due_at, :now) "
            "WHERE link_checks.lease_until IS NULL OR link_checks.lease_until <= :now"
        ),
        {"url": normalized_url, "host": host, "now": now},
    )


async def lock_rate(session: AsyncSession, *, now: datetime) -> datetime:
    """Lock the global rate row (claims take turns on it) and return when the next check may start."""
    await session.execute(
        text("INSERT INTO link_check_rate (id, next_slot_at) VALUES (1, :now) ON CONFLICT (id) DO NOTHING"),
        {"now": now},
    )
    found = await session.execute(text("SELECT next_slot_at FROM link_check_rate WHERE id = 1 FOR UPDATE"))
    slot: datetime = found.scalar_one()
    return slot


async def set_rate(session: AsyncSession, *, next_slot_at: datetime) -> None:
    await session.execute(text("UPDATE link_check_rate SET next_slot_at = :at WHERE id = 1"), {"at": next_slot_at})


async def due_candidates(session: AsyncSession, *, now: datetime, limit: int) -> list[Candidate]:
    """Due checks whose host is free, in due order, locked (others' locked rows are skipped)."""
    found = await session.execute(
        text(
            "SELECT c.normalized_url, c.host, h.free_at FROM link_checks c "
            "LEFT JOIN link_check_hosts h ON h.host = c.host "
            "WHERE c.due_at <= :now AND (h.free_at IS NULL OR h.free_at <= :now) "
            "ORDER BY c.due_at LIMIT :limit FOR UPDATE OF c SKIP LOCKED"
        ),
        {"now": now, "limit": limit},
    )
    return [Candidate(row.normalized_url, row.host, row.free_at) for row in found]


async def lease(
    session: AsyncSession, *, normalized_url: str, now: datetime, lease: timedelta, worker_id: str
) -> Leased:
    """Hold the check (and its host) until ``now + lease``."""
    found = await session.execute(
        text(
            "UPDATE link_checks SET due_at = :until, lease_until = :until, worker_id = :worker, claims = claims + 1 "
            "WHERE normalized_url = :url RETURNING host, claims, status, moved_to, settled_at, failing_since, failure"
        ),
        {"url": normalized_url, "until": now + lease, "worker": worker_id},
    )
    row = found.one()
    await hold_host(session, host=row.host, until=now + lease)
    return Leased(normalized_url, row.host, row.claims, _state(row))


def _state(row: Any) -> LinkState:
    status: LinkStatus | None = row.status
    failure: FailureKind | None = row.failure
    return LinkState(
        status=status,
        moved_to=row.moved_to,
        settled_at=row.settled_at,
        failing_since=row.failing_since,
        failure=failure,
    )


async def hold_host(session: AsyncSession, *, host: str, until: datetime) -> None:
    await session.execute(
        text(
            "INSERT INTO link_check_hosts (host, free_at) VALUES (:host, :until) "
            "ON CONFLICT (host) DO UPDATE SET free_at = EXCLUDED.free_at"
        ),
        {"host": host, "until": until},
    )


async def finish(
    session: AsyncSession,
    leased: Leased,
    *,
    worker_id: str,
    state: LinkState,
    next_check_at: datetime,
    checked_at: datetime,
    result: str,
) -> bool:
    """Record the check's outcome, fenced by (worker, claim): False when the lease was lost meanwhile."""
    found = await session.execute(
        text(
            "UPDATE link_checks SET due_at = :due, lease_until = NULL, worker_id = NULL, status = :status, "
            "moved_to = :moved_to, settled_at = :settled_at, failing_since = :failing_since, failure = :failure, "
            "checked_at = :checked_at, last_result = :result "
            "WHERE normalized_url = :url AND worker_id = :worker AND claims = :claims"
        ),
        {
            "url": leased.normalized_url,
            "worker": worker_id,
            "claims": leased.claims,
            "due": next_check_at,
            "status": state.status,
            "moved_to": state.moved_to,
            "settled_at": state.settled_at,
            "failing_since": state.failing_since,
            "failure": state.failure,
            "checked_at": checked_at,
            "result": result,
        },
    )
    return bool(found.rowcount)  # type: ignore[attr-defined]


async def release(session: AsyncSession, leased: Leased, *, worker_id: str, now: datetime) -> None:
    """Hand a check back unfinished (shutting down): due again at once, its host free."""
    await session.execute(
        text(
            "UPDATE link_checks SET due_at = :now, lease_until = NULL, worker_id = NULL "
            "WHERE normalized_url = :url AND worker_id = :worker AND claims = :claims"
        ),
        {"url": leased.normalized_url, "worker": worker_id, "claims": leased.claims, "now": now},
    )
    await hold_host(session, host=leased.host, until=now)


async def delete_check(session: AsyncSession, normalized_url: str) -> None:
    await session.execute(text("DELETE FROM link_checks WHERE normalized_url = :url"), {"url": normalized_url})


async def live_bookmarks(session: AsyncSession, normalized_url: str) -> list[LiveBookmark]:
    found = await session.execute(
        text(
            "SELECT user_id, client_bookmark_id FROM bookmark_urls WHERE normalized_url = :url AND NOT deleted "
            "ORDER BY user_id, client_bookmark_id"
        ),
        {"url": normalized_url},
    )
    return [LiveBookmark(row.user_id, row.client_bookmark_id) for row in found]


async def bookmark_url(session: AsyncSession, user_id: uuid.UUID, client_bookmark_id: str) -> str | None:
    """The normalized URL of the user's live bookmark, None when enrichment knows no such bookmark."""
    found = await session.execute(
        text(
            "SELECT normalized_url FROM bookmark_urls WHERE user_id = :user AND client_bookmark_id = :id "
            "AND NOT deleted AND normalized_url <> ''"
        ),
        {"user": user_id, "id": client_bookmark_id},
    )
    url = found.scalar_one_or_none()
    return None if url is None else str(url)


async def count_request(session: AsyncSession, user_id: uuid.UUID, *, window_start: datetime) -> tuple[int, datetime]:
    """Count one check-now request in the user's minute starting at ``window_start``; return the minute's
    count and its start."""
    found = await session.execute(
        text(
            "INSERT INTO link_check_requests (user_id, window_start, used) VALUES (:user, :start, 1) "
            "ON CONFLICT (user_id) DO UPDATE SET "
            "window_start = GREATEST(link_check_requests.window_start, EXCLUDED.window_start), "
            "used = CASE WHEN link_check_requests.window_start < EXCLUDED.window_start THEN 1 "
            "ELSE link_check_requests.used + 1 END "
            "RETURNING used, window_start"
        ),
        {"user": user_id, "start": window_start},
    )
    row = found.one()
    return int(row.used), row.window_start


async def forget_user(session: AsyncSession, user_id: uuid.UUID) -> None:
    await session.execute(text("DELETE FROM link_check_requests WHERE user_id = :user"), {"user": user_id})


async def queue_stats(session: AsyncSession, *, now: datetime) -> QueueStats:
    found = await session.execute(
        text("SELECT count(*) AS due, min(due_at) AS oldest FROM link_checks WHERE due_at <= :now"),
        {"now": now},
    )
    row = found.one()
    oldest = 0.0 if row.oldest is None else max(0.0, (now - row.oldest).total_seconds())
    return QueueStats(due=int(row.due), oldest_due_seconds=oldest)
