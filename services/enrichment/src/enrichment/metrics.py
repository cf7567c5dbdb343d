"""Metrics of the enrichment service and worker (names are part of the operations contract)."""

from __future__ import annotations

from typing import get_args

from prometheus_client import Counter, Gauge, Histogram

from enrichment.domain.links import LINK_STATUSES
from enrichment.domain.model import JOB_STATUSES, QuotaKind
from enrichment.fetch.errors import FetchErrorCode

JOBS = Gauge("enrichment_jobs", "Enrichment jobs by status (refreshed from the database by the worker).", ["status"])
JOB_TRANSITIONS = Counter(
    "enrichment_job_transitions_total", "Jobs entering a status, counted by the process that moved them.", ["status"]
)
OLDEST_PENDING_AGE = Gauge(
    "enrichment_oldest_pending_job_age_seconds",
    "How long the longest-waiting due job (pending, or retrying past its scheduled time) has waited for a worker.",
)
ATTEMPT_DURATION = Histogram(
    "enrichment_attempt_duration_seconds",
    "Duration of one enrichment attempt (fetch, analysis, render, store) by outcome.",
    ["outcome"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0),
)
FETCH_ERRORS = Counter("enrichment_fetch_errors_total", "Failed page fetches by error code.", ["code"])
CACHE_LOOKUPS = Counter("enrichment_cache_lookups_total", "Results-cache lookups on enqueue.", ["result"])
QUOTA_REJECTIONS = Counter("enrichment_quota_rejections_total", "Enqueues refused by the free-tier quota.", ["kind"])
PREVIEW_REQUESTS = Counter(
    "enrichment_preview_requests_total",
    "Link preview requests by result: hit (shared cache), miss (fetched), failed (page not fetched), rate-limited.",
    ["result"],
)
PREVIEW_DURATION = Histogram(
    "enrichment_preview_fetch_duration_seconds",
    "Time to fetch a link preview that was not cached (page head, picture and icon, storage) by result.",
    ["result"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0),
)
LINK_CHECKS = Counter(
    "enrichment_link_checks_total",
    "Link checks by what the check found (ok, moved, gone, blocked, unreachable; gone and unreachable count "
    "before they are confirmed), or lost (the lease ran out first).",
    ["result"],
)
LINK_CHECKS_DUE = Gauge("enrichment_link_checks_due", "Link checks due now and not yet started (the queue).")
LINK_CHECKS_OLDEST_DUE = Gauge(
    "enrichment_link_check_oldest_due_seconds", "How long the longest-waiting due link check has been due."
)
LINK_CHECK_INTERVAL = Gauge(
    "enrichment_link_check_interval_seconds",
    "LINK_CHECK_INTERVAL_DAYS in seconds, set by a worker whose link checker runs (0: not running here).",
)

ATTEMPT_OUTCOMES: tuple[str, ...] = ("completed", "retrying", "failed", "lost", "released", "unrecorded")
CACHE_RESULTS: tuple[str, ...] = ("hit", "miss")
PREVIEW_RESULTS: tuple[str, ...] = ("hit", "miss", "failed", "rate-limited")


def _initialise() -> None:
    """Every known label value at 0 from process start: a panel or alert sees 0, not an absent series."""
    for status in JOB_STATUSES:
        JOB_TRANSITIONS.labels(status)
    for outcome in ATTEMPT_OUTCOMES:
        ATTEMPT_DURATION.labels(outcome)
    for code in get_args(FetchErrorCode):
        FETCH_ERRORS.labels(code)
    for result in CACHE_RESULTS:
        CACHE_LOOKUPS.labels(result)
    for kind in get_args(QuotaKind):
        QUOTA_REJECTIONS.labels(kind)
    for result in PREVIEW_RESULTS:
        PREVIEW_REQUESTS.labels(result)
    for result in ("miss", "failed"):
        PREVIEW_DURATION.labels(result)
    for result in (*LINK_STATUSES, "lost"):
        LINK_CHECKS.labels(result)


_initialise()
