"""Tables of the enrichment database.

Hot queries and the index that serves each:

- worker claim: due in-flight jobs by ``next_attempt_at`` → ``ix_jobs_due`` (partial, in-flight only)
- enqueue attach: the one in-flight shared job of a normalized URL → ``ux_jobs_in_flight_url`` (partial
  unique, which also makes "one shared job per URL in flight" a database invariant; captured jobs are
  private and outside it)
- completion fan-out: bookmarks attached to a job → ``ix_bookmark_enrichments_job``
- duplicate check: a user's bookmarks with a normalized URL → ``ix_bookmark_enrichments_user_url``,
  ``ix_bookmark_urls_user_url``
- rolling minute quota: a user's recent charges → ``ix_quota_charges_user_time``
- link checks: due checks by ``due_at`` → ``ix_link_checks_due``; the live bookmarks of a checked URL
  (fan-out, and URLs still to schedule) → ``ix_bookmark_urls_url``
- cleanup: expired cache rows, finished jobs, unreferenced captures → ``ix_results_cache_expires``,
  ``ix_jobs_finished``, ``ix_bookmark_enrichments_url``
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Date,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

_IN_FLIGHT_SQL = "status IN ('pending', 'processing', 'retrying')"


class EnrichmentTable(SQLModel, registry=registry()):
    """Base of the enrichment tables: a metadata of their own, so they never meet another service's
    tables of the same name (``users``) in one process."""


def _ts(nullable: bool = True, *, default_now: bool = False) -> Any:
    return Column(DateTime(timezone=True), nullable=nullable, server_default=text("now()") if default_now else None)


class JobRow(EnrichmentTable, table=True):
    """One enrichment of one normalized URL; several bookmarks (of one or many users) may wait on it.

    ``next_attempt_at`` is when a worker may next take the job: the scheduled time of a pending or
    retrying job, and the lease expiry of a processing one (kept equal to ``lease_until``), so one
    index finds both fresh work and work abandoned by a crashed worker.
    """

    __tablename__ = "jobs"
    __table_args__ = (
        CheckConstraint(
            "status IN ('pending', 'processing', 'retrying', 'completed', 'failed')", name="ck_jobs_status"
        ),
        Index("ix_jobs_due", "next_attempt_at", postgresql_where=text(_IN_FLIGHT_SQL)),
        Index("ix_jobs_due_by_priority", "priority", "next_attempt_at", postgresql_where=text(_IN_FLIGHT_SQL)),
        # Captured jobs (private_for) are one user's own: they never block or serve another enqueue.
        Index(
            "ux_jobs_in_flight_url",
            "normalized_url",
            unique=True,
            postgresql_where=text(f"{_IN_FLIGHT_SQL} AND private_for IS NULL"),
        ),
        Index("ix_jobs_charged_user", "charged_user_id", postgresql_where=text("charged_user_id IS NOT NULL")),
        Index("ix_jobs_finished", "updated_at", postgresql_where=text("status IN ('completed', 'failed')")),
        Index("ix_jobs_status", "status"),
    )

    id: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    normalized_url: str = Field(sa_column=Column(Text, nullable=False))
    url: str = Field(sa_column=Column(Text, nullable=False))
    charged_user_id: uuid.UUID | None = Field(default=None, sa_column=Column(UUID(as_uuid=True)))
    status: str = Field(sa_column=Column(Text, nullable=False, server_default="pending"))
    attempts: int = Field(sa_column=Column(Integer, nullable=False, server_default=text("0")))
    # Claims that ended in a lease expiry (the worker crashed or hung): counted in ``attempts`` too, which
    # fences the claims, but not held against the site; bounded by ENRICHMENT_MAX_WORKER_CRASHES.
    crashes: int = Field(sa_column=Column(Integer, nullable=False, server_default=text("0")))
    next_attempt_at: datetime = Field(sa_column=_ts(nullable=False, default_now=True))
    # Claim order: 0 (INTERACTIVE) before 1 (BULK, bookmarks written by an import), then longest waiting.
    priority: int = Field(sa_column=Column(Integer, nullable=False, server_default=text("0")))
    # The user whose captured page this job analyses (POST /v1/enrichment/capture); NULL for a shared
    # job that fetches its URL. A private job's result reaches neither the cache nor shared snapshots.
    private_for: uuid.UUID | None = Field(default=None, sa_column=Column(UUID(as_uuid=True)))
    lease_until: datetime | None = Field(default=None, sa_column=_ts())
    worker_id: str | None = Field(default=None, sa_column=Column(Text))
    error_code: str | None = Field(default=None, sa_column=Column(Text))
    # W3C trace context of the request that created the job; each attempt's span links to it.
    trace_context: dict[str, str] = Field(sa_column=Column(JSONB, nullable=False, server_default=text("'{}'::jsonb")))
    created_at: datetime = Field(sa_column=_ts(nullable=False, default_now=True))
    updated_at: datetime = Field(sa_column=_ts(nullable=False, default_now=True))


class BookmarkEnrichmentRow(EnrichmentTable, table=True):
    """A user's bookmark and the enrichment it waits for (``job_id``) or received (``result``).

    ``status`` and ``error_code`` are written when the job ends (or a cached result is applied); while
    a job is in flight the job's own status is the live one.
    """

    __tablename__ = "bookmark_enrichments"
    __table_args__ = (
        CheckConstraint(
            "status IN ('pending', 'processing', 'retrying', 'completed', 'failed')",
            name="ck_bookmark_enrichments_status",
        ),
        Index("ix_bookmark_enrichments_job", "job_id", postgresql_where=text("job_id IS NOT NULL")),
        Index("ix_bookmark_enrichments_user_url", "user_id", "normalized_url"),
        # Housekeeping keeps a URL's captures while any bookmark still shows its result.
        Index("ix_bookmark_enrichments_url", "normalized_url"),
    )

    user_id: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    client_bookmark_id: str = Field(sa_column=Column(Text, primary_key=True))
    normalized_url: str = Field(sa_column=Column(Text, nullable=False))
    job_id: uuid.UUID | None = Field(
        default=None, sa_column=Column(UUID(as_uuid=True), ForeignKey("jobs.id", ondelete="SET NULL"))
    )
    status: str = Field(sa_column=Column(Text, nullable=False))
    error_code: str | None = Field(default=None, sa_column=Column(Text))
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSONB))
    cache_hit: bool = Field(sa_column=Column(Boolean, nullable=False, server_default=text("false")))
    client_saved_at: datetime | None = Field(default=None, sa_column=_ts())
    enriched_at: datetime | None = Field(default=None, sa_column=_ts())
    created_at: datetime = Field(sa_column=_ts(nullable=False, default_now=True))
    updated_at: datetime = Field(sa_column=_ts(nullable=False, default_now=True))


class ResultCacheRow(EnrichmentTable, table=True):
    """Enrichment output per normalized URL, reused across users until ``expires_at``."""

    __tablename__ = "results_cache"
    __table_args__ = (Index("ix_results_cache_expires", "expires_at"),)

    normalized_url: str = Field(sa_column=Column(Text, primary_key=True))
    result: dict[str, Any] = Field(sa_column=Column(JSONB, nullable=False))
    job_id: uuid.UUID | None = Field(default=None, sa_column=Column(UUID(as_uuid=True)))
    created_at: datetime = Field(sa_column=_ts(nullable=False, default_now=True))
    expires_at: datetime = Field(sa_column=_ts(nullable=False))


class SnapshotRow(EnrichmentTable, table=True):
    """Stored page captures per normalized URL (shared like the cache; the newest job's replace older)."""

    __tablename__ = "snapshots"
    __table_args__ = (
        CheckConstraint("kind IN ('html', 'screenshot', 'readable_text', 'thumbnail')", name="ck_snapshots_kind"),
    )

    normalized_url: str = Field(sa_column=Column(Text, primary_key=True))
    kind: str = Field(sa_column=Column(Text, primary_key=True))
    content_type: str = Field(sa_column=Column(Text, nullable=False))
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    size_bytes: int = Field(sa_column=Column(Integer, nullable=False))
    job_id: uuid.UUID | None = Field(default=None, sa_column=Column(UUID(as_uuid=True)))
    created_at: datetime = Field(sa_column=_ts(nullable=False, default_now=True))


class CapturedPageRow(EnrichmentTable, table=True):
    """The HTML a user's browser captured, waiting for its private job; deleted when the job ends.

    Apart from ``jobs`` so that the job rows the worker scans and keeps for their retention stay small,
    and so that up to 10 MiB per capture live only as long as the job needs them.
    """

    __tablename__ = "captured_pages"
    __table_args__ = (Index("ix_captured_pages_user", "user_id"),)

    job_id: uuid.UUID = Field(
        sa_column=Column(UUID(as_uuid=True), ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    )
    user_id: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), nullable=False))
    html: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    title: str | None = Field(default=None, sa_column=Column(Text))  # document.title as the browser had it
    size_bytes: int = Field(sa_column=Column(Integer, nullable=False))
    created_at: datetime = Field(sa_column=_ts(nullable=False, default_now=True))


class PrivateSnapshotRow(EnrichmentTable, table=True):
    """Captures made from a user's captured page: stored under that user's bookmark, served only to it."""

    __tablename__ = "private_snapshots"
    __table_args__ = (
        CheckConstraint(
            "kind IN ('html', 'screenshot', 'readable_text', 'thumbnail')", name="ck_private_snapshots_kind"
        ),
    )

    user_id: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    client_bookmark_id: str = Field(sa_column=Column(Text, primary_key=True))
    kind: str = Field(sa_column=Column(Text, primary_key=True))
    normalized_url: str = Field(sa_column=Column(Text, nullable=False))
    content_type: str = Field(sa_column=Column(Text, nullable=False))
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    size_bytes: int = Field(sa_column=Column(Integer, nullable=False))
    job_id: uuid.UUID | None = Field(default=None, sa_column=Column(UUID(as_uuid=True)))
    created_at: datetime = Field(sa_column=_ts(nullable=False, default_now=True))


class UserQuotaRow(EnrichmentTable, table=True):
    """A free user's job creations in the current UTC month. Locking it serializes the user's enqueues,
    which is what keeps both quotas exact under concurrency."""

    __tablename__ = "user_quotas"

    user_id: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    month: date = Field(sa_column=Column(Date, nullable=False))
    month_used: int = Field(sa_column=Column(Integer, nullable=False, server_default=text("0")))
    updated_at: datetime = Field(sa_column=_ts(nullable=False, default_now=True))


class QuotaChargeRow(EnrichmentTable, table=True):
    """One charged job creation; the rows of the last minute are the rolling per-minute window."""

    __tablename__ = "quota_charges"
    __table_args__ = (Index("ix_quota_charges_user_time", "user_id", "charged_at"),)

    id: int | None = Field(default=None, sa_column=Column(BigInteger, primary_key=True, autoincrement=True))
    user_id: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), nullable=False))
    charged_at: datetime = Field(sa_column=_ts(nullable=False))
    job_id: uuid.UUID | None = Field(default=None, sa_column=Column(UUID(as_uuid=True)))


class UserProjectionRow(EnrichmentTable, table=True):
    """Projection of auth's users (user.updated / user.deleted / user.merged); the fallback when auth
    cannot be asked. A deleted user keeps only this flag so late events cannot resurrect it."""

    __tablename__ = "users"

    user_id: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    use_ai: bool = Field(sa_column=Column(Boolean, nullable=False, server_default=text("false")))
    is_pro: bool = Field(sa_column=Column(Boolean, nullable=False, server_default=text("false")))
    deleted: bool = Field(sa_column=Column(Boolean, nullable=False, server_default=text("false")))
    event_at: datetime | None = Field(default=None, sa_column=_ts())
    updated_at: datetime = Field(sa_column=_ts(nullable=False, default_now=True))


class BookmarkUrlRow(EnrichmentTable, table=True):
    """Projection of the bookmarks service: which normalized URL each bookmark of a user has."""

    __tablename__ = "bookmark_urls"
    __table_args__ = (
        Index("ix_bookmark_urls_user_url", "user_id", "normalized_url", postgresql_where=text("NOT deleted")),
        Index("ix_bookmark_urls_url", "normalized_url", postgresql_where=text("NOT deleted")),
    )

    user_id: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    client_bookmark_id: str = Field(sa_column=Column(Text, primary_key=True))
    normalized_url: str = Field(sa_column=Column(Text, nullable=False))
    deleted: bool = Field(sa_column=Column(Boolean, nullable=False, server_default=text("false")))
    position: datetime = Field(sa_column=_ts(nullable=False))


class UserTagRow(EnrichmentTable, table=True):
    """Tags a user's bookmarks received, so the analyser can reuse the user's vocabulary."""

    __tablename__ = "user_tags"

    user_id: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    tag: str = Field(sa_column=Column(Text, primary_key=True))
    uses: int = Field(sa_column=Column(Integer, nullable=False, server_default=text("1")))
    last_used_at: datetime = Field(sa_column=_ts(nullable=False, default_now=True))


class PreviewRow(EnrichmentTable, table=True):
    """A link preview per normalized URL, shared across users until ``expires_at`` (a failed fetch is
    kept too, for a shorter time, with every fact null). Fed only by public fetches, never by captures."""

    __tablename__ = "previews"
    __table_args__ = (Index("ix_previews_expires", "expires_at"),)

    normalized_url: str = Field(sa_column=Column(Text, primary_key=True))
    title: str | None = Field(default=None, sa_column=Column(Text))
    description: str | None = Field(default=None, sa_column=Column(Text))
    site_name: str | None = Field(default=None, sa_column=Column(Text))
    language: str | None = Field(default=None, sa_column=Column(Text))
    canonical_url: str | None = Field(default=None, sa_column=Column(Text))
    image_id: str | None = Field(default=None, sa_column=Column(Text))
    favicon_id: str | None = Field(default=None, sa_column=Column(Text))
    fetched_at: datetime = Field(sa_column=_ts(nullable=False))
    expires_at: datetime = Field(sa_column=_ts(nullable=False))


class PreviewImageRow(EnrichmentTable, table=True):
    """A re-encoded picture (WebP) by the SHA-256 of its bytes: preview images, favicons and the
    thumbnails enrichment stores. Bookmarks keep pointing at them, so they outlive the preview rows."""

    __tablename__ = "preview_images"

    id: str = Field(sa_column=Column(Text, primary_key=True))
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    width: int = Field(sa_column=Column(Integer, nullable=False))
    height: int = Field(sa_column=Column(Integer, nullable=False))
    size_bytes: int = Field(sa_column=Column(Integer, nullable=False))
    created_at: datetime = Field(sa_column=_ts(nullable=False, default_now=True))


class PreviewRateRow(EnrichmentTable, table=True):
    """A user's preview requests in the current minute (one row per user, rolled to each new minute)."""

    __tablename__ = "preview_rate"

    user_id: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    window_start: datetime = Field(sa_column=_ts(nullable=False))
    used: int = Field(sa_column=Column(Integer, nullable=False))


class LinkCheckRow(EnrichmentTable, table=True):
    """The health check of one normalized URL, serving every bookmark that has it (docs/api-guide.md,
    section 15). ``due_at`` is when a checker may take it next: the scheduled time, and while a checker
    holds it the lease expiry (``lease_until``), so one index finds due checks and abandoned ones.
    ``status``/``moved_to``/``settled_at``: the last settled result; ``failing_since``/``failure``: the
    current run of unconfirmed failures (enrichment.domain.links.LinkState)."""

    __tablename__ = "link_checks"
    __table_args__ = (
        CheckConstraint(
            "status IS NULL OR status IN ('ok', 'moved', 'gone', 'blocked', 'unreachable')",
            name="ck_link_checks_status",
        ),
        CheckConstraint("failure IS NULL OR failure IN ('gone', 'unreachable')", name="ck_link_checks_failure"),
        Index("ix_link_checks_due", "due_at"),
    )

    normalized_url: str = Field(sa_column=Column(Text, primary_key=True))
    host: str = Field(sa_column=Column(Text, nullable=False))
    due_at: datetime = Field(sa_column=_ts(nullable=False))
    lease_until: datetime | None = Field(default=None, sa_column=_ts())
    worker_id: str | None = Field(default=None, sa_column=Column(Text))
    # Counts claims; with worker_id it fences the write that ends a check (a lost lease writes nothing).
    claims: int = Field(sa_column=Column(Integer, nullable=False, server_default=text("0")))
    status: str | None = Field(default=None, sa_column=Column(Text))
    moved_to: str | None = Field(default=None, sa_column=Column(Text))
    settled_at: datetime | None = Field(default=None, sa_column=_ts())
    failing_since: datetime | None = Field(default=None, sa_column=_ts())
    failure: str | None = Field(default=None, sa_column=Column(Text))
    checked_at: datetime | None = Field(default=None, sa_column=_ts())
    last_result: str | None = Field(default=None, sa_column=Column(Text))  # http-404, dns, timeout, ...
    created_at: datetime = Field(sa_column=_ts(nullable=False, default_now=True))


class LinkCheckHostRow(EnrichmentTable, table=True):
    """When a host may be asked again: a check in flight holds it until its lease ends, a finished one
    until two seconds after its answer (one request at a time per host, spaced)."""

    __tablename__ = "link_check_hosts"

    host: str = Field(sa_column=Column(Text, primary_key=True))
    free_at: datetime = Field(sa_column=_ts(nullable=False))


class LinkCheckRateRow(EnrichmentTable, table=True):
    """The one row of the global check rate: when the next check may start (LINK_CHECK_RATE_PER_SECOND).
    Claims lock it, so checkers of every replica share the rate and take turns."""

    __tablename__ = "link_check_rate"
    __table_args__ = (CheckConstraint("id = 1", name="ck_link_check_rate_single"),)

    id: int = Field(sa_column=Column(Integer, primary_key=True))
    next_slot_at: datetime = Field(sa_column=_ts(nullable=False))


class LinkCheckRequestRow(EnrichmentTable, table=True):
    """A user's check-now requests in the current minute (one row per user, rolled to each new minute)."""

    __tablename__ = "link_check_requests"

    user_id: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    window_start: datetime = Field(sa_column=_ts(nullable=False))
    used: int = Field(sa_column=Column(Integer, nullable=False))
