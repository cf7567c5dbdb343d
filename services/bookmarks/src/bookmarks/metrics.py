"""Metrics of the bookmarks service."""

from __future__ import annotations

from prometheus_client import Histogram

DELTA_PAGE_RECORDS = Histogram(
    "delta_page_records",
    "Records (upserts + tombstones) returned per delta page.",
    ["service"],
    buckets=(0, 1, 10, 50, 100, 200, 500, 1000),
)

DELTA_PAGE_RECORDS.labels("bookmarks")  # present from process start: the dashboard shows 0 pages, not no data
