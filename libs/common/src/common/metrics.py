"""Prometheus metrics shared by every service. Service-specific metrics live with their service."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import Counter, Gauge, Histogram

HTTP_REQUEST_DURATION = Histogram(
    "http_request_duration_seconds",
    "Time to answer an HTTP request, by route template and status.",
    ["service", "method", "route", "status"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
HTTP_IN_FLIGHT = Gauge("http_requests_in_flight", "Requests being served.", ["service"])

OUTBOX_PENDING = Gauge("outbox_pending_events", "Outbox rows not yet published.", ["service"])
OUTBOX_OLDEST_AGE = Gauge("outbox_oldest_pending_age_seconds", "Age of the oldest unpublished outbox row.", ["service"])
OUTBOX_PUBLISHED = Counter("outbox_published_total", "Events published from the outbox.", ["service", "topic"])
OUTBOX_REPUBLISHED = Counter(
    "outbox_republished_total",
    "Outbox events sent again because the broker had lost records it acknowledged.",
    ["service"],
)

CONSUMER_LAG = Gauge(
    "kafka_consumer_lag", "Messages behind the partition's high watermark.", ["service", "topic", "partition"]
)
EVENTS_PROCESSED = Counter("events_processed_total", "Consumed events by outcome.", ["service", "topic", "outcome"])
EVENTS_DEAD_LETTERED = Counter(
    "events_dead_lettered_total", "Events parked after exhausting their attempts.", ["service", "topic"]
)

# Broker reachability is a degraded state, not unreadiness: /readyz ignores the broker, so
# that a broker outage does not take every pod out of its Service while the outbox keeps writes safe.
KAFKA_BROKER_REACHABLE = Gauge(
    "kafka_broker_reachable",
    "1 while a bootstrap broker accepts TCP connections from this process, 0 while none does.",
    ["service"],
)
# Divergence of a projection: the creation time of the newest event the source published vs
# the newest event a consumer applied, per topic. A consumer whose broker lost records, or whose position
# lies past a restarted broker's log end, shows lag 0 but stops advancing here.
EVENTS_SOURCE_NEWEST = Gauge(
    "events_source_newest_seconds",
    "Creation time (unix seconds) of the newest outbox event of the topic acknowledged by the broker.",
    ["service", "topic"],
)
EVENTS_APPLIED_NEWEST = Gauge(
    "events_applied_newest_seconds",
    "Creation time (unix seconds) of the newest event of the topic this consumer has applied.",
    ["service", "topic"],
)

# Anti-entropy (common.anti_entropy): a projection compared with its source. Any repaired record is a hole
# the events did not fill (a lost log, a restore, a mistake): the alert BookmarksProjectionRepaired.
ANTI_ENTROPY_REPAIRED = Counter(
    "anti_entropy_repaired_records_total",
    "Records of a projection found different from its source and re-published by the source.",
    ["service", "projection"],
)
ANTI_ENTROPY_CHECKS = Counter(
    "anti_entropy_checks_total",
    "Anti-entropy passes over every user of a projection, by outcome (completed, failed).",
    ["service", "projection", "outcome"],
)
ANTI_ENTROPY_LAST_COMPLETED = Gauge(
    "anti_entropy_last_completed_timestamp_seconds",
    "When (unix seconds) the last complete anti-entropy pass of the projection ended; 0 before the first.",
    ["service", "projection"],
)
ANTI_ENTROPY_OUTCOMES: tuple[str, ...] = ("completed", "failed")


def initialise_anti_entropy_series(service: str, projection: str) -> None:
    """The projection's anti-entropy series at 0 from the start (decision 0100)."""
    ANTI_ENTROPY_REPAIRED.labels(service, projection)
    ANTI_ENTROPY_LAST_COMPLETED.labels(service, projection)
    for outcome in ANTI_ENTROPY_OUTCOMES:
        ANTI_ENTROPY_CHECKS.labels(service, projection, outcome)


# Client-side database deadlines that ran out (common.db.Deadlines), by what was waited for: a turn at the
# gate ("acquire"), a new connection ("connect") or a statement's answer ("statement"). Any increase means
# the database answered too slowly or not at all; a steady rate is a hanging database.
DB_DEADLINES_EXCEEDED = Counter(
    "db_deadlines_exceeded_total",
    "Units of work that gave up waiting for the database, by what they waited for.",
    ["service", "phase"],
)
DB_DEADLINE_PHASES: tuple[str, ...] = ("acquire", "connect", "statement")


def initialise_deadline_series(service: str) -> None:
    """Every deadline phase at 0 from the engine's creation, so the alert and its panel see 0, not no data."""
    for phase in DB_DEADLINE_PHASES:
        DB_DEADLINES_EXCEEDED.labels(service, phase)


# Refusals answered by the HTTP server layer itself (common.server), before any application code runs.
SERVER_REFUSALS = Counter(
    "http_server_refusals_total",
    "Requests and WebSocket handshakes the HTTP server layer refused before the application saw them, by reason.",
    ["service", "reason"],
)
SERVER_REFUSAL_REASONS: tuple[str, ...] = (
    "headers-too-large",
    "uri-too-long",
    "malformed-request",
    "websocket-handshake",
)

# Outcomes a consumer counts per event (events_processed_total's `outcome`).
CONSUMER_OUTCOMES: tuple[str, ...] = ("applied", "duplicate", "skipped", "retried", "failed")


def initialise_server_series(service: str) -> None:
    """Every refusal reason at 0 from start, so a dashboard shows 0 rather than no data."""
    for reason in SERVER_REFUSAL_REASONS:
        SERVER_REFUSALS.labels(service, reason)


def initialise_consumer_series(service: str, topics: Iterable[str], *, dead_letters: bool = True) -> None:
    """The consumer's counters at 0 for each topic it reads and each outcome, from process start."""
    for topic in topics:
        for outcome in CONSUMER_OUTCOMES:
            EVENTS_PROCESSED.labels(service, topic, outcome)
        if dead_letters:
            EVENTS_DEAD_LETTERED.labels(service, topic)


def initialise_outbox_series(service: str, topics: Iterable[str]) -> None:
    """The relay's counters at 0 from process start, for each topic its service publishes."""
    OUTBOX_REPUBLISHED.labels(service)
    for topic in topics:
        OUTBOX_PUBLISHED.labels(service, topic)
