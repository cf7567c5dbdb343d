"""Prometheus metrics shared by every service. Service-specific metrics live with their service."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

HTTP_REQUEST_DURATION = Histogram(
    "http_request_duration_seconds",
    "Time to answer an HTTP request, by route template and status.",
    ["service", "method", "route", "status"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
HTTP_IN_FLIGHT = Gauge("http_requests_in_flight", "Requests being served.", ["service"])

OUTBOX_PENDING = Gauge("outbox_pending_events", "Outbox rows not yet published.", ["service"])
OUTBOX_OLDEST_AGE = Gauge(
    "outbox_oldest_pending_age_seconds", "Age of the oldest unpublished outbox row.", ["service"]
)
OUTBOX_PUBLISHED = Counter("outbox_published_total", "Events published from the outbox.", ["service", "topic"])

CONSUMER_LAG = Gauge(
    "kafka_consumer_lag", "Messages behind the partition's high watermark.", ["service", "topic", "partition"]
)
EVENTS_PROCESSED = Counter(
    "events_processed_total", "Consumed events by outcome.", ["service", "topic", "outcome"]
)
EVENTS_DEAD_LETTERED = Counter(
    "events_dead_lettered_total", "Events parked after exhausting their attempts.", ["service", "topic"]
)
