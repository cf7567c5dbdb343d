"""Metrics of the bookmarks service."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

DELTA_PAGE_RECORDS = Histogram(
    "delta_page_records",
    "Records (upserts + tombstones) returned per delta page.",
    ["service"],
    buckets=(0, 1, 10, 50, 100, 200, 500, 1000),
)

DELTA_PAGE_RECORDS.labels("bookmarks")  # present from process start: the dashboard shows 0 pages, not no data

TRASH_PURGED = Counter(
    "bookmarks_trash_purged_total",
    "Trashed bookmarks whose kept state was purged: expired (past TRASH_RETENTION_DAYS) or by the user.",
    ["reason"],
)
TRASH_RESTORED = Counter("bookmarks_trash_restored_total", "Bookmarks restored from the trash.")

for _reason in ("expired", "user"):
    TRASH_PURGED.labels(_reason)
