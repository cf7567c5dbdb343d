"""Gateway metrics (the shared HTTP ones come from ``common.metrics``)."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import Counter, Gauge, Histogram

UPSTREAM_ERRORS = Counter(
    "gateway_upstream_errors_total",
    "Proxied requests that failed at the upstream, by upstream and kind (connect, timeout, pool, protocol, stream).",
    ["upstream", "kind"],
)
RATE_LIMITED = Counter("gateway_rate_limited_total", "Requests refused by a rate limit.", ["scope"])
WS_CONNECTIONS = Gauge("gateway_websocket_connections", "Open /v1/events WebSockets on this replica.")
WS_REJECTED = Counter("gateway_websocket_rejected_total", "WebSockets closed at connect, by reason.", ["reason"])
NUDGE_LATENCY = Histogram(
    "gateway_nudge_latency_seconds",
    "From a bookmark event's occurredAt to the nudge leaving the gateway (oldest event of a coalesced burst).",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
NUDGES_SENT = Counter("gateway_nudges_sent_total", "bookmarks_changed messages sent to sockets.")
DENIED_USERS = Gauge("gateway_denied_users", "Deleted or merged-away users whose tokens are refused.")

RATE_LIMIT_SCOPES: tuple[str, ...] = ("ip", "image", "user")
UPSTREAM_ERROR_KINDS: tuple[str, ...] = ("connect", "pool", "timeout", "protocol", "stream")
WS_REJECT_REASONS: tuple[str, ...] = ("unauthorized", "rate-limited", "too-many-connections")


def initialise(upstreams: Iterable[str]) -> None:
    """Every known label value at 0 from process start: a panel or alert sees 0, not an absent series."""
    for scope in RATE_LIMIT_SCOPES:
        RATE_LIMITED.labels(scope)
    for upstream in upstreams:
        for kind in UPSTREAM_ERROR_KINDS:
            UPSTREAM_ERRORS.labels(upstream, kind)
    for reason in WS_REJECT_REASONS:
        WS_REJECTED.labels(reason)
