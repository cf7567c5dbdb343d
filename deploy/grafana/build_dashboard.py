"""Builds the Grafana dashboard of the platform.

Writes deploy/helm/bookmarks-platform/files/dashboard.json, which the chart ships as a ConfigMap
labelled grafana_dashboard="1" (metrics.grafanaDashboard.enabled). Edit this file, not the JSON:

    python deploy/grafana/build_dashboard.py           # rewrite the JSON
    python deploy/grafana/build_dashboard.py --check   # exit 1 when the JSON is stale (check.sh)

Every metric used here must be exported by the services (tests/ops/test_dashboard_metrics.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().parents[1] / "helm" / "bookmarks-platform" / "files" / "dashboard.json"

DS = {"type": "prometheus", "uid": "${datasource}"}
# Probe and scrape traffic is not user traffic.
NOT_PROBES = 'route!~"/healthz|/readyz|/metrics"'
# WebSocket upgrades last as long as the socket: not a latency.
NOT_SOCKETS = 'route!="/v1/events"'
SVC = 'service=~"$service"'
DELTA = 'route="/v1/bookmarks/delta"'
RATE = "$__rate_interval"
HTTP = "http_request_duration_seconds"
# One value per partition even if two replicas briefly both report it (rebalance).
LAG_PER_PARTITION = f"max by (service, topic, partition) (kafka_consumer_lag{{{SVC}}})"
SERVICES = f"label_values({HTTP}_count, service)"


class Layout:
    """Places panels on Grafana's 24-column grid, left to right, top to bottom."""

    def __init__(self) -> None:
        self.y = 0
        self.x = 0
        self.row_height = 0
        self.next_id = 1
        self.panels: list[dict[str, Any]] = []

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    def row(self, title: str) -> None:
        self._newline()
        self.panels.append(
            {
                "type": "row",
                "id": self._id(),
                "title": title,
                "collapsed": False,
                "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y},
                "panels": [],
            }
        )
        self.y += 1

    def _newline(self) -> None:
        if self.x:
            self.y += self.row_height
            self.x = 0
            self.row_height = 0

    def add(self, panel: dict[str, Any], w: int = 12, h: int = 8) -> None:
        if self.x + w > 24:
            self._newline()
        panel["id"] = self._id()
        panel["gridPos"] = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.panels.append(panel)
        self.x += w
        self.row_height = max(self.row_height, h)


def target(expr: str, legend: str, ref: str) -> dict[str, Any]:
    # Every query shows a number, 0 included, on an idle stack (tests/ops/test_prometheus_scrape.py).
    if not expr.endswith("vector(0)"):
        expr = or_zero(expr)
    return {"datasource": DS, "expr": expr, "legendFormat": legend, "refId": ref, "range": True}


def timeseries(
    title: str,
    targets: list[tuple[str, str]],
    unit: str = "short",
    description: str = "",
    stack: bool = False,
    min_zero: bool = True,
) -> dict[str, Any]:
    custom: dict[str, Any] = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10, "showPoints": "never"}
    if stack:
        custom["stacking"] = {"mode": "normal", "group": "A"}
    defaults: dict[str, Any] = {"unit": unit, "custom": custom}
    if min_zero:
        defaults["min"] = 0
    return {
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": DS,
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": {
            "legend": {"displayMode": "table", "placement": "bottom", "calcs": ["lastNotNull", "max"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
        "targets": [target(e, legend, chr(ord("A") + i)) for i, (e, legend) in enumerate(targets)],
    }


def stat(title: str, expr: str, unit: str = "short", description: str = "") -> dict[str, Any]:
    return {
        "type": "stat",
        "title": title,
        "description": description,
        "datasource": DS,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}},
        "targets": [target(expr, "", "A")],
    }


def series(metric: str, selector: str) -> str:
    return f"{metric}{{{selector}}}" if selector else metric


def sum_rate(metric: str, selector: str, by: str) -> str:
    aggregation = f"sum by ({by}) " if by else "sum"
    return f"{aggregation}(rate({series(metric, selector)}[{RATE}]))"


def or_zero(expr: str) -> str:
    """``expr``, or one 0 when it has no series at all (an idle stack shows 0, not "No data")."""
    return f"({expr}) or on () vector(0)"


def quantile(q: float, metric: str, selector: str, by: str) -> str:
    """A latency quantile; a window without observations (NaN) is dropped, and with none anywhere it is 0."""
    group = f"{by}, le" if by else "le"
    raw = f"histogram_quantile({q}, sum by ({group}) (rate({series(metric + '_bucket', selector)}[{RATE}])))"
    return or_zero(f"{raw} >= 0")


def ratio(part: str, whole: str, by: str) -> str:
    """``part / whole`` per ``by`` group: 0 where ``part`` has no series yet or ``whole`` is 0."""
    zero_part = f"{whole} * 0"
    return or_zero(f"({part} or {zero_part}) / clamp_min({whole}, 1e-9)")


def build() -> dict[str, Any]:
    lay = Layout()

    # --- Golden signals ----------------------------------------------------------------------
    lay.row("Golden signals per service")
    lay.add(
        timeseries(
            "Request rate",
            [(or_zero(sum_rate(f"{HTTP}_count", f"{SVC}, {NOT_PROBES}", "service")), "{{service}}")],
            unit="reqps",
        )
    )
    lay.add(
        timeseries(
            "Error ratio (5xx)",
            [
                (
                    ratio(
                        sum_rate(f"{HTTP}_count", f'{SVC}, {NOT_PROBES}, status=~"5.."', "service"),
                        sum_rate(f"{HTTP}_count", f"{SVC}, {NOT_PROBES}", "service"),
                        "service",
                    ),
                    "{{service}}",
                )
            ],
            unit="percentunit",
            description="Alert BookmarksHigh5xxRatio fires above 5% for 5m.",
        )
    )
    lay.add(
        timeseries(
            "Client errors (4xx) by status",
            [
                (
                    or_zero(sum_rate(f"{HTTP}_count", f'{SVC}, {NOT_PROBES}, status=~"4.."', "service, status")),
                    "{{service}} {{status}}",
                )
            ],
            unit="reqps",
            description="429 = rate limit or quota, 401 = expired tokens; a jump after a deploy is a regression.",
        )
    )
    lay.add(
        timeseries(
            "Latency p50 / p99",
            [
                (quantile(0.5, HTTP, f"{SVC}, {NOT_PROBES}, {NOT_SOCKETS}", "service"), "p50 {{service}}"),
                (quantile(0.99, HTTP, f"{SVC}, {NOT_PROBES}, {NOT_SOCKETS}", "service"), "p99 {{service}}"),
            ],
            unit="s",
            description="WebSocket upgrades (/v1/events) are excluded: they last as long as the socket.",
        )
    )
    lay.add(
        timeseries(
            "Saturation: CPU per service",
            [(f"sum by (service) (rate(process_cpu_seconds_total{{{SVC}}}[{RATE}]))", "{{service}}")],
            unit="percentunit",
            description="CPU seconds per second summed over replicas (1 = one full core).",
        )
    )
    lay.add(
        timeseries(
            "Saturation: resident memory per pod",
            [(f"process_resident_memory_bytes{{{SVC}}}", "{{service}} {{instance}}")],
            unit="bytes",
        )
    )
    lay.add(
        timeseries(
            "Slowest routes (p99)",
            [
                (
                    "topk(10, "
                    + quantile(
                        0.99,
                        HTTP,
                        f"{SVC}, {NOT_PROBES}, {NOT_SOCKETS}",
                        "service, method, route",
                    )
                    + ")",
                    "{{service}} {{method}} {{route}}",
                )
            ],
            unit="s",
        ),
        w=24,
    )

    lay.add(
        timeseries(
            "Requests in flight",
            [(f"sum by (service) (http_requests_in_flight{{{SVC}}})", "{{service}}")],
            description="Requests being served right now, summed over replicas.",
        )
    )
    lay.add(
        timeseries(
            "Refused by the HTTP server layer",
            [(sum_rate("http_server_refusals_total", SVC, "service, reason"), "{{service}} {{reason}}")],
            unit="reqps",
            description="Answered before the application: oversized heads (headers-too-large, uri-too-long), "
            "malformed requests, invalid WebSocket handshakes. A rise is a misbehaving client or a probe.",
        )
    )

    # --- Delta sync ----------------------------------------------------------------------------
    lay.row("Delta sync")
    lay.add(
        timeseries(
            "Delta page latency",
            [
                (quantile(0.5, HTTP, DELTA, ""), "p50"),
                (quantile(0.99, HTTP, DELTA, ""), "p99"),
            ],
            unit="s",
            description="GET /v1/bookmarks/delta, as served by the bookmarks service.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Delta requests by status",
            [(or_zero(sum_rate(f"{HTTP}_count", DELTA, "status")), "{{status}}")],
            unit="reqps",
            description="400 here is mostly invalid-cursor: clients resending tampered or foreign cursors.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Records per page",
            [
                (
                    ratio(
                        f"sum(rate(delta_page_records_sum[{RATE}]))", f"sum(rate(delta_page_records_count[{RATE}]))", ""
                    ),
                    "mean",
                ),
                (quantile(0.99, "delta_page_records", "", ""), "p99"),
            ],
            description="Pages near the limit (default 200) mean clients are catching up on large backlogs.",
        ),
        w=8,
    )

    lay.add(
        timeseries(
            "Trash",
            [
                (or_zero(f"sum by (reason) (rate(bookmarks_trash_purged_total[{RATE}]))"), "purged: {{reason}}"),
                (or_zero(f"sum(rate(bookmarks_trash_restored_total[{RATE}]))"), "restored"),
            ],
            unit="ops",
            description="Deleted bookmarks purged (expired past TRASH_RETENTION_DAYS, or by the user) and restored. "
            "A burst of restores is someone undoing a mass delete.",
        ),
        w=8,
    )

    # --- Enrichment ----------------------------------------------------------------------------
    lay.row("Enrichment")
    lay.add(
        timeseries(
            "Jobs by status",
            [("max by (status) (enrichment_jobs)", "{{status}}")],
            stack=True,
            description="Counted from the database; max() because every replica reports the same count.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Job transitions",
            [(f"sum by (status) (rate(enrichment_job_transitions_total[{RATE}]))", "{{status}}")],
            unit="ops",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Oldest pending job",
            [("max(enrichment_oldest_pending_job_age_seconds)", "age")],
            unit="s",
            description="Alert BookmarksEnrichmentPendingJobAge fires above 15m.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Cache hit ratio",
            [
                (
                    ratio(
                        sum_rate("enrichment_cache_lookups_total", 'result="hit"', ""),
                        sum_rate("enrichment_cache_lookups_total", "", ""),
                        "",
                    ),
                    "hit ratio",
                )
            ],
            unit="percentunit",
            description="Share of enqueues answered from the normalized-URL result cache (nothing charged).",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Link previews",
            [(f"sum by (result) (rate(enrichment_preview_requests_total[{RATE}]))", "{{result}}")],
            unit="ops",
            stack=True,
            description="GET /v1/previews: hit (shared cache), miss (fetched), failed (page not fetched), "
            "rate-limited.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Link preview fetch time",
            [
                (quantile(0.5, "enrichment_preview_fetch_duration_seconds", "", ""), "p50"),
                (quantile(0.99, "enrichment_preview_fetch_duration_seconds", "", ""), "p99"),
            ],
            unit="s",
            description="A preview not in the shared cache: page head, picture and icon fetched, re-encoded, stored.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Quota rejections",
            [(f"sum by (kind) (rate(enrichment_quota_rejections_total[{RATE}]))", "{{kind}}")],
            unit="ops",
            description="429 quota-exceeded for free users, per-minute or monthly.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Fetch errors by code",
            [(f"sum by (code) (rate(enrichment_fetch_errors_total[{RATE}]))", "{{code}}")],
            unit="ops",
            stack=True,
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Attempt duration by outcome",
            [
                (quantile(0.5, "enrichment_attempt_duration_seconds", "", "outcome"), "p50 {{outcome}}"),
                (quantile(0.99, "enrichment_attempt_duration_seconds", "", "outcome"), "p99 {{outcome}}"),
            ],
            unit="s",
        ),
        w=24,
    )

    # --- Link health ----------------------------------------------------------------------------
    lay.row("Link health")
    lay.add(
        timeseries(
            "Link checks by result",
            [(f"sum by (result) (rate(enrichment_link_checks_total[{RATE}]))", "{{result}}")],
            unit="ops",
            stack=True,
            description=(
                "What each check found; gone and unreachable count before a second check confirms them. "
                "lost: the lease ran out first. The total stays under LINK_CHECK_RATE_PER_SECOND."
            ),
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Due link checks",
            [("max(enrichment_link_checks_due)", "due")],
            description="Checks due and not started; max() because every worker counts the same table.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Oldest due link check",
            [
                ("max(enrichment_link_check_oldest_due_seconds)", "waited"),
                ("2 * max(enrichment_link_check_interval_seconds)", "alert threshold"),
            ],
            unit="s",
            description="Alert BookmarksLinkChecksBehind fires above twice the interval, for 1h.",
        ),
        w=8,
    )

    # --- Real time ---------------------------------------------------------------------------
    lay.row("Real time (gateway)")
    lay.add(stat("Open WebSockets", "sum(gateway_websocket_connections)"), w=4, h=8)
    lay.add(
        timeseries(
            "Open WebSockets per pod",
            [("sum by (instance) (gateway_websocket_connections)", "{{instance}}")],
        ),
        w=10,
    )
    lay.add(
        timeseries(
            "Nudge latency (event to socket)",
            [
                (quantile(0.5, "gateway_nudge_latency_seconds", "", ""), "p50"),
                (quantile(0.99, "gateway_nudge_latency_seconds", "", ""), "p99"),
            ],
            unit="s",
            description="From the event's occurredAt to the bookmarks_changed send. Alert above 5s (p99).",
        ),
        w=10,
    )
    lay.add(
        timeseries("Nudges sent", [(f"sum(rate(gateway_nudges_sent_total[{RATE}]))", "nudges/s")], unit="ops"),
        w=8,
    )
    lay.add(
        timeseries(
            "Rate limited",
            [(f"sum by (scope) (rate(gateway_rate_limited_total[{RATE}]))", "{{scope}}")],
            unit="reqps",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Upstream errors",
            [(f"sum by (upstream, kind) (rate(gateway_upstream_errors_total[{RATE}]))", "{{upstream}} {{kind}}")],
            unit="ops",
        ),
        w=8,
    )

    lay.add(
        timeseries(
            "WebSockets refused at connect",
            [(f"sum by (reason) (rate(gateway_websocket_rejected_total[{RATE}]))", "{{reason}}")],
            unit="ops",
            description="Closed right after the handshake: unauthorized, rate-limited, too-many-connections.",
        ),
        w=12,
    )
    lay.add(
        timeseries(
            "Denied users",
            [("max(gateway_denied_users)", "users")],
            description="Deleted or merged-away users whose still-valid access tokens the gateway refuses.",
        ),
        w=12,
    )

    # --- Auth ----------------------------------------------------------------------------------
    lay.row("Auth")
    lay.add(
        timeseries(
            "Sessions issued by method",
            [(f"sum by (method) (rate(auth_sessions_issued_total[{RATE}]))", "{{method}}")],
            unit="ops",
        )
    )
    lay.add(
        timeseries(
            "Refresh-token reuse",
            [(f"sum(increase(auth_refresh_token_reuse_total[{RATE}]))", "reused")],
            description="An already-rotated refresh token presented again (its family is revoked): "
            "a stolen token or a client bug. Investigate any sustained rise.",
        )
    )

    # --- Kafka and outbox --------------------------------------------------------------------
    lay.row("Kafka and outbox")
    lay.add(
        timeseries(
            "Consumer lag",
            [(f"sum by (service, topic) ({LAG_PER_PARTITION})", "{{service}} {{topic}}")],
            description="Messages behind, summed over partitions. Alert above 1000 for 10m.",
        )
    )
    lay.add(
        timeseries(
            "Events processed by outcome",
            [
                (
                    f"sum by (service, outcome) (rate(events_processed_total{{{SVC}}}[{RATE}]))",
                    "{{service}} {{outcome}}",
                )
            ],
            unit="ops",
            description="duplicate = a redelivery the inbox recognised (harmless); failed = retried or dead-lettered.",
        )
    )
    lay.add(
        timeseries(
            "Dead-lettered events",
            [
                (
                    f"sum by (service, topic) (increase(events_dead_lettered_total{{{SVC}}}[{RATE}]))",
                    "{{service}} {{topic}}",
                )
            ],
            description="Any value here is an event a service gave up on. See runbook BookmarksEventsDeadLettered.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Outbox backlog",
            [(f"max by (service) (outbox_pending_events{{{SVC}}})", "{{service}}")],
            description="Rows written but not yet published by the relay (max: replicas report the same table).",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Oldest unpublished outbox event",
            [(f"max by (service) (outbox_oldest_pending_age_seconds{{{SVC}}})", "{{service}}")],
            unit="s",
            description="Alert BookmarksOutboxBacklogStale fires above 1m for 5m.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Published events by topic",
            [(f"sum by (service, topic) (rate(outbox_published_total{{{SVC}}}[{RATE}]))", "{{service}} {{topic}}")],
            unit="ops",
        ),
        w=24,
    )

    lay.add(
        timeseries(
            "Broker reachable",
            [(f"min by (service) (kafka_broker_reachable{{{SVC}}})", "{{service}}")],
            description="1 while a bootstrap broker accepts connections. 0 is degraded, not down: writes wait in "
            "the outbox. Alert BookmarksBrokerUnreachable after 5m.",
            min_zero=True,
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Projection divergence",
            [
                (
                    "max by (topic) (events_source_newest_seconds) - on (topic) group_right () "
                    "max by (service, topic) (events_applied_newest_seconds)",
                    "{{service}} {{topic}}",
                )
            ],
            unit="s",
            description="Newest event published minus newest event applied, per consumer and topic. "
            "Alert BookmarksProjectionDiverged above 5m for 10m.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Outbox events sent again",
            [(f"sum by (service) (increase(outbox_republished_total{{{SVC}}}[{RATE}]))", "{{service}}")],
            description="Events the broker had acknowledged and then lost, published again by the relay.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Anti-entropy repairs",
            [
                (
                    f"sum by (service, projection) (increase(anti_entropy_repaired_records_total{{{SVC}}}[{RATE}]))",
                    "{{service}} {{projection}}",
                )
            ],
            description="Projection records found different from their source and re-published by it. "
            "See runbook BookmarksProjectionRepaired.",
        ),
    )
    lay.add(
        timeseries(
            "Since the last anti-entropy pass",
            [
                (
                    "time() - max by (service, projection) "
                    f"(anti_entropy_last_completed_timestamp_seconds{{{SVC}}} > 0)",
                    "{{service}} {{projection}}",
                )
            ],
            unit="s",
            description="Age of the last completed pass (one per ANTI_ENTROPY_INTERVAL_SECONDS, 1h by default). "
            "Alert BookmarksAntiEntropyFailing when passes only fail for 6h.",
        ),
    )

    return {
        "uid": "bookmarks-platform",
        "title": "Bookmarks platform",
        "description": "Golden signals, delta sync, enrichment, real time and Kafka of the bookmarks platform.",
        "tags": ["bookmarks-platform"],
        "editable": True,
        "graphTooltip": 1,
        "refresh": "30s",
        "schemaVersion": 39,
        "version": 1,
        "time": {"from": "now-6h", "to": "now"},
        "timepicker": {},
        "timezone": "browser",
        "annotations": {"list": []},
        "links": [],
        "templating": {
            "list": [
                {
                    "type": "datasource",
                    "name": "datasource",
                    "label": "Data source",
                    "query": "prometheus",
                    "current": {},
                    "hide": 0,
                    "refresh": 1,
                    "regex": "",
                },
                {
                    "type": "query",
                    "name": "service",
                    "label": "Service",
                    "datasource": DS,
                    "query": {"query": SERVICES, "refId": "service"},
                    "definition": SERVICES,
                    "includeAll": True,
                    "multi": True,
                    "allValue": ".*",
                    "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
                    "refresh": 2,
                    "sort": 1,
                    "hide": 0,
                    "regex": "",
                },
            ]
        },
        "panels": lay.panels,
    }


def render() -> str:
    return json.dumps(build(), indent=2, sort_keys=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail when the committed JSON is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not OUTPUT.exists() or OUTPUT.read_text() != text:
            print(f"{OUTPUT} is stale: run python deploy/grafana/build_dashboard.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
