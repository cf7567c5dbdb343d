"""Enrichment rules without I/O: job states, quotas, retry schedule, snapshot status, result views."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final, Literal, Protocol

JobStatus = Literal["pending", "processing", "retrying", "completed", "failed"]
PENDING: Final = "pending"
PROCESSING: Final = "processing"
RETRYING: Final = "retrying"
COMPLETED: Final = "completed"
FAILED: Final = "failed"
JOB_STATUSES: Final[tuple[JobStatus, ...]] = (PENDING, PROCESSING, RETRYING, COMPLETED, FAILED)
IN_FLIGHT: Final[frozenset[str]] = frozenset({PENDING, PROCESSING, RETRYING})

SnapshotStatus = Literal["pending", "processing", "ready", "completed", "failed", "skipped"]

# Free tier (spec Limits); Pro users are not limited.
FREE_PER_MINUTE: Final = 5
FREE_PER_MONTH: Final = 200
MINUTE_WINDOW: Final = timedelta(minutes=1)

MONTHLY_QUOTA_MESSAGE: Final = (
    f"The monthly enrichment limit of {FREE_PER_MONTH} is reached; it resets on the 1st (UTC). "
    "Upgrade to Pro for unlimited enrichment."
)
MINUTE_QUOTA_MESSAGE: Final = (
    f"At most {FREE_PER_MINUTE} enrichments per minute on the free plan; try again shortly or upgrade to Pro."
)

# Fields of the spec's "Enrichment status result", in its order.
RESULT_FIELDS: Final = (
    "normalizedUrl",
    "domain",
    "title",
    "description",
    "thumbnailUrl",
    "summary",
    "saveWhy",
    "tags",
    "snapshotStatus",
)


class Clock(Protocol):
    """Where "now" comes from; injected so that month and minute boundaries can be tested."""

    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Entitlements:
    """What the user may do, as auth (or, when auth is unreachable, our projection) knows it."""

    exists: bool
    use_ai: bool
    is_pro: bool


QuotaKind = Literal["minute", "month"]


@dataclass(frozen=True, slots=True)
class QuotaRejection:
    kind: QuotaKind
    message: str
    retry_after_seconds: int


def month_of(now: datetime) -> date:
    """The UTC calendar month ``now`` falls in, as its first day."""
    utc = now.astimezone(UTC)
    return date(utc.year, utc.month, 1)


def next_month_start(now: datetime) -> datetime:
    first = month_of(now)
    year, month = (first.year + 1, 1) if first.month == 12 else (first.year, first.month + 1)
    return datetime(year, month, 1, tzinfo=UTC)


def check_quota(*, now: datetime, month_used: int, recent_charges: Sequence[datetime]) -> QuotaRejection | None:
    """Decide a free user's next job creation; ``recent_charges`` are this user's charges in the last minute.

    The monthly limit is checked first: when both are hit, waiting a minute would not help.
    """
    if month_used >= FREE_PER_MONTH:
        wait = next_month_start(now) - now
        return QuotaRejection("month", MONTHLY_QUOTA_MESSAGE, _ceil_seconds(wait))
    in_window = sorted(t for t in recent_charges if t > now - MINUTE_WINDOW)
    if len(in_window) >= FREE_PER_MINUTE:
        # The window frees a slot when its oldest charge (of the last FREE_PER_MINUTE) leaves it.
        oldest_blocking = in_window[-FREE_PER_MINUTE]
        return QuotaRejection("minute", MINUTE_QUOTA_MESSAGE, _ceil_seconds(oldest_blocking + MINUTE_WINDOW - now))
    return None


@dataclass(frozen=True, slots=True)
class QuotaUse:
    """A user's enrichment quota as the next job creation would see it; limits are None on Pro."""

    is_pro: bool
    used_this_month: int
    resets_at: datetime

    @property
    def monthly_limit(self) -> int | None:
        return None if self.is_pro else FREE_PER_MONTH

    @property
    def per_minute_limit(self) -> int | None:
        return None if self.is_pro else FREE_PER_MINUTE

    @property
    def remaining_this_month(self) -> int | None:
        return None if self.is_pro else max(0, FREE_PER_MONTH - self.used_this_month)


def quota_use(*, is_pro: bool, now: datetime, counted_month: date | None, month_used: int) -> QuotaUse:
    """The use ``check_quota`` would be given now: a count kept for an earlier month is a fresh month's 0.

    Only free job creations are counted, so on Pro this is what the free allowance would start from.
    """
    used = month_used if counted_month == month_of(now) else 0
    return QuotaUse(is_pro=is_pro, used_this_month=used, resets_at=next_month_start(now))


def _ceil_seconds(delta: timedelta) -> int:
    seconds = delta.total_seconds()
    return max(1, int(seconds) + (0 if seconds == int(seconds) else 1))


def crashes_exhausted(*, crashes: int, max_crashes: int) -> bool:
    """Whether a job whose workers crashed ``crashes`` times (this one included) must end ``failed``."""
    return crashes >= max_crashes


def retry_delay(*, attempts: int, retriable: bool, delays: Sequence[float]) -> float | None:
    """Seconds until the next attempt after failed attempt number ``attempts``, or None when final."""
    if not retriable or attempts > len(delays) or attempts < 1:
        return None
    return float(delays[attempts - 1])


MAX_CAPTURED_HTML_BYTES: Final = 10 * 1024 * 1024
"""A captured page's HTML, UTF-8 encoded (the request body may be larger by its JSON escaping)."""


@dataclass(frozen=True, slots=True)
class CapturedPage:
    """HTML (UTF-8) as a user's browser rendered it, and the document title the browser had."""

    html: bytes
    title: str | None

    def text(self) -> str:
        return self.html.decode("utf-8", errors="replace")


def snapshot_status(*, is_html: bool, html_stored: bool, text_stored: bool, rendered_stored: bool) -> SnapshotStatus:
    """docs/api-guide.md, section 6: skipped for non-HTML; completed with a browser snapshot; ready with HTML + text."""
    if not is_html:
        return "skipped"
    if rendered_stored:
        return "completed"
    if html_stored and text_stored:
        return "ready"
    return "failed"


def normalize_tags(tags: Sequence[str], *, limit: int = 8) -> list[str]:
    """Lowercase, trimmed, deduplicated, at most ``limit`` (docs/api-guide.md, section 6)."""
    seen: dict[str, None] = {}
    for tag in tags:
        cleaned = " ".join(tag.split()).lower()
        if cleaned and len(cleaned) <= 64:
            seen.setdefault(cleaned, None)
    return list(seen)[:limit]


def public_result(result: Mapping[str, Any], *, is_pro: bool) -> dict[str, Any]:
    """The spec's "Enrichment status result"; ``saveWhy`` is Pro-gated (docs/api-guide.md, section 6)."""
    view = {name: result.get(name) for name in RESULT_FIELDS}
    view["tags"] = list(result.get("tags") or [])
    if not is_pro:
        view["saveWhy"] = None
    return view


# --- bookmarks written by an import (docs/api-guide.md, section 13) ------------------------------------------------

INTERACTIVE_PRIORITY = 0
BULK_PRIORITY = 1  # import work: claimed only when no interactive job is due


def import_action(*, known: bool, use_ai: bool, is_pro: bool, cached: bool) -> str:
    """What enrichment does for a bookmark an import created: ``"cache"`` (apply the cached result, not
    charged), ``"bulk"`` (a low-priority job, Pro only) or ``"none"``. Without the user's AI consent, or
    before the user is known here, nothing happens; free users enqueue themselves, within their quota."""
    if not known or not use_ai:
        return "none"
    if cached:
        return "cache"
    return "bulk" if is_pro else "none"
