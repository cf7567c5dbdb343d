"""Reads of the enrichment database."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import RowMapping, text
from sqlalchemy.ext.asyncio import AsyncSession

from enrichment.domain.model import CapturedPage

_IN_FLIGHT = "('pending', 'processing', 'retrying')"


async def user_projection(session: AsyncSession, user_id: uuid.UUID) -> RowMapping | None:
    result = await session.execute(text("SELECT * FROM users WHERE user_id = :u"), {"u": user_id})
    return result.mappings().first()


async def user_projections(session: AsyncSession, user_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, RowMapping]:
    """:func:`user_projection` of each of ``user_ids`` that has one (one statement for a batch of events)."""
    result = await session.execute(text("SELECT * FROM users WHERE user_id = ANY(:ids)"), {"ids": list(user_ids)})
    return {row["user_id"]: row for row in result.mappings()}


async def quota_row(session: AsyncSession, user_id: uuid.UUID) -> RowMapping | None:
    """The user's quota counter (``month``, ``month_used``) without locking it: a read for display."""
    result = await session.execute(text("SELECT month, month_used FROM user_quotas WHERE user_id = :u"), {"u": user_id})
    return result.mappings().first()


async def deleted_users(session: AsyncSession, user_ids: Collection[uuid.UUID]) -> set[uuid.UUID]:
    """Which of ``user_ids`` are deleted (one statement for a batch of events)."""
    result = await session.execute(
        text("SELECT user_id FROM users WHERE user_id = ANY(:ids) AND deleted"), {"ids": list(user_ids)}
    )
    return set(result.scalars())


async def is_user_deleted(session: AsyncSession, user_id: uuid.UUID) -> bool:
    result = await session.execute(text("SELECT deleted FROM users WHERE user_id = :u"), {"u": user_id})
    row = result.first()
    return bool(row is not None and row.deleted)


async def cached_result(session: AsyncSession, normalized_url: str) -> dict[str, Any] | None:
    """The cached result of a normalized URL unless it has expired (database time: one clock for all)."""
    result = await session.execute(
        text("SELECT result FROM results_cache WHERE normalized_url = :n AND expires_at > now()"),
        {"n": normalized_url},
    )
    row = result.first()
    return dict(row.result) if row is not None else None


async def cached_results(session: AsyncSession, normalized_urls: Collection[str]) -> dict[str, dict[str, Any]]:
    """:func:`cached_result` of each of ``normalized_urls`` that has one (one statement for a batch)."""
    result = await session.execute(
        text("SELECT normalized_url, result FROM results_cache WHERE normalized_url = ANY(:n) AND expires_at > now()"),
        {"n": list(normalized_urls)},
    )
    return {row.normalized_url: dict(row.result) for row in result}


async def enriched_bookmarks(
    session: AsyncSession, bookmarks: Sequence[tuple[uuid.UUID, str]]
) -> set[tuple[uuid.UUID, str]]:
    """Which of ``bookmarks`` (user id, client bookmark id) have an enrichment row (one statement for a batch)."""
    result = await session.execute(
        text(
            "SELECT be.user_id, be.client_bookmark_id FROM bookmark_enrichments be "
            "JOIN unnest(CAST(:users AS uuid[]), CAST(:ids AS text[])) AS b(user_id, client_bookmark_id) "
            "USING (user_id, client_bookmark_id)"
        ),
        {"users": [user for user, _ in bookmarks], "ids": [bookmark for _, bookmark in bookmarks]},
    )
    return {(row.user_id, row.client_bookmark_id) for row in result}


async def enrichment(session: AsyncSession, user_id: uuid.UUID, client_bookmark_id: str) -> RowMapping | None:
    """The bookmark's enrichment row with the live status of its job (if it still has one)."""
    result = await session.execute(
        text(
            "SELECT be.*, j.status AS job_status, j.error_code AS job_error_code "
            "FROM bookmark_enrichments be LEFT JOIN jobs j ON j.id = be.job_id "
            "WHERE be.user_id = :u AND be.client_bookmark_id = :b"
        ),
        {"u": user_id, "b": client_bookmark_id},
    )
    return result.mappings().first()


async def reusable_duplicate(
    session: AsyncSession, user_id: uuid.UUID, normalized_url: str, client_bookmark_id: str
) -> RowMapping | None:
    """Another bookmark of this user with the same normalized URL whose job or result can be shared.

    A bookmark known only from the bookmarks projection has nothing to share yet, and a failed one is
    worth a fresh attempt, so only completed results and jobs still in flight qualify. A completed one
    is preferred (it answers at once), then the most recently enqueued.
    """
    result = await session.execute(
        text(
            f"""
            SELECT be.*, j.status AS job_status
            FROM bookmark_enrichments be LEFT JOIN jobs j ON j.id = be.job_id
            WHERE be.user_id = :u AND be.normalized_url = :n AND be.client_bookmark_id <> :b
              AND ((be.status = 'completed' AND be.result IS NOT NULL) OR j.status IN {_IN_FLIGHT})
            ORDER BY (be.status = 'completed') DESC, be.updated_at DESC
            LIMIT 1
            """  # noqa: S608 - constant fragment
        ),
        {"u": user_id, "n": normalized_url, "b": client_bookmark_id},
    )
    return result.mappings().first()


async def user_tags(session: AsyncSession, user_id: uuid.UUID, *, limit: int = 100) -> list[str]:
    result = await session.execute(
        text("SELECT tag FROM user_tags WHERE user_id = :u ORDER BY uses DESC, last_used_at DESC, tag LIMIT :n"),
        {"u": user_id, "n": limit},
    )
    return [row.tag for row in result]


async def snapshot_for_bookmark(
    session: AsyncSession, user_id: uuid.UUID, client_bookmark_id: str, kind: str
) -> RowMapping | None:
    """The stored capture of this user's bookmark's page; other users' bookmarks never match.

    A bookmark enriched from its user's captured page has private captures (of its current URL); then
    only those are served: the URL's shared ones show a page this user did not see.
    """
    result = await session.execute(
        text(
            "SELECT content_type, data, created_at FROM ("
            "  SELECT 0 AS rank, p.content_type, p.data, p.created_at FROM bookmark_enrichments be "
            "  JOIN private_snapshots p ON p.user_id = be.user_id AND p.client_bookmark_id = be.client_bookmark_id "
            "   AND p.normalized_url = be.normalized_url AND p.kind = :k "
            "  WHERE be.user_id = :u AND be.client_bookmark_id = :b AND be.status = 'completed' "
            "  UNION ALL "
            "  SELECT 1, s.content_type, s.data, s.created_at FROM bookmark_enrichments be "
            "  JOIN snapshots s ON s.normalized_url = be.normalized_url AND s.kind = :k "
            "  WHERE be.user_id = :u AND be.client_bookmark_id = :b AND be.status = 'completed' "
            "   AND NOT EXISTS (SELECT 1 FROM private_snapshots p WHERE p.user_id = be.user_id "
            "   AND p.client_bookmark_id = be.client_bookmark_id AND p.normalized_url = be.normalized_url)"
            ") found ORDER BY rank LIMIT 1"
        ),
        {"u": user_id, "b": client_bookmark_id, "k": kind},
    )
    return result.mappings().first()


async def captured_page(session: AsyncSession, job_id: uuid.UUID) -> CapturedPage | None:
    """The captured page a private job analyses, or None when it is gone."""
    result = await session.execute(text("SELECT html, title FROM captured_pages WHERE job_id = :j"), {"j": job_id})
    row = result.first()
    return CapturedPage(html=bytes(row.html), title=row.title) if row is not None else None


async def job_counts(session: AsyncSession) -> dict[str, int]:
    result = await session.execute(text("SELECT status, count(*) AS n FROM jobs GROUP BY status"))
    return {row.status: int(row.n) for row in result}


async def oldest_due_wait_seconds(session: AsyncSession) -> float:
    """How long the longest-waiting due job has waited (0 when none is waiting)."""
    result = await session.execute(
        text(
            "SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(next_attempt_at)), 0) AS age FROM jobs "
            "WHERE status IN ('pending', 'retrying') AND next_attempt_at <= now()"
        )
    )
    return max(0.0, float(result.one().age))


async def database_now(session: AsyncSession) -> datetime:
    value: datetime = (await session.execute(text("SELECT now()"))).scalar_one()
    return value


async def first_attached_user(session: AsyncSession, job_id: uuid.UUID) -> uuid.UUID | None:
    result = await session.execute(
        text("SELECT user_id FROM bookmark_enrichments WHERE job_id = :j ORDER BY created_at LIMIT 1"), {"j": job_id}
    )
    row = result.first()
    return row.user_id if row is not None else None
