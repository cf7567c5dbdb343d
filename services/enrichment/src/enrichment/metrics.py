"""Metrics of the enrichment service and worker (names are part of the operations contract)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

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
