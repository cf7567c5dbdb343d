"""The Prometheus metrics the services export: the one list dashboards and alerts are checked against.

Kept by hand in sync with the services' prometheus-client instrumentation (the names agreed in the
ops contract). tests/ops/test_dashboard_metrics.py asserts that every metric and label used by
deploy/helm/bookmarks-platform/files/{dashboard.json,rules.yml} is listed here; a later test will
compare this list with the real /metrics output of each running process.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    name: str
    type: str  # counter | gauge | histogram
    labels: frozenset[str]
    exported_by: str  # which processes, for humans


def _m(name: str, type_: str, labels: tuple[str, ...], exported_by: str) -> Metric:
    return Metric(name, type_, frozenset(labels), exported_by)


METRICS: tuple[Metric, ...] = (
    # --- every process -----------------------------------------------------------------------
    _m("http_request_duration_seconds", "histogram", ("service", "method", "route", "status"), "all HTTP processes"),
    # --- outbox relay (auth, bookmarks, enrichment) ------------------------------------------
    _m("outbox_pending_events", "gauge", ("service",), "auth, bookmarks, enrichment"),
    _m("outbox_oldest_pending_age_seconds", "gauge", ("service",), "auth, bookmarks, enrichment"),
    _m("outbox_published_total", "counter", ("service", "topic"), "auth, bookmarks, enrichment"),
    # --- consumers ---------------------------------------------------------------------------
    _m("kafka_consumer_lag", "gauge", ("service", "topic", "partition"), "every consumer"),
    _m("events_processed_total", "counter", ("service", "topic", "outcome"), "every consumer"),
    _m("events_dead_lettered_total", "counter", ("service", "topic"), "every consumer"),
    # --- bookmarks ---------------------------------------------------------------------------
    _m("delta_page_records", "histogram", ("service",), "bookmarks"),
    # --- enrichment --------------------------------------------------------------------------
    _m("enrichment_jobs", "gauge", ("status",), "enrichment"),
    _m("enrichment_job_transitions_total", "counter", ("status",), "enrichment"),
    _m("enrichment_oldest_pending_job_age_seconds", "gauge", (), "enrichment"),
    _m("enrichment_attempt_duration_seconds", "histogram", ("outcome",), "enrichment worker"),
    _m("enrichment_fetch_errors_total", "counter", ("code",), "enrichment worker"),
    _m("enrichment_cache_lookups_total", "counter", ("result",), "enrichment API"),
    _m("enrichment_quota_rejections_total", "counter", ("kind",), "enrichment API"),
    # --- gateway -----------------------------------------------------------------------------
    _m("gateway_websocket_connections", "gauge", (), "gateway"),
    _m("gateway_nudge_latency_seconds", "histogram", (), "gateway"),
    _m("gateway_nudges_sent_total", "counter", (), "gateway"),
    _m("gateway_rate_limited_total", "counter", ("scope",), "gateway"),
    _m("gateway_upstream_errors_total", "counter", ("upstream", "kind"), "gateway"),
    # --- prometheus-client default collectors (served with the default registry, Linux) -------
    _m("process_cpu_seconds_total", "counter", (), "all processes"),
    _m("process_resident_memory_bytes", "gauge", (), "all processes"),
    _m("process_virtual_memory_bytes", "gauge", (), "all processes"),
    _m("process_open_fds", "gauge", (), "all processes"),
    _m("process_max_fds", "gauge", (), "all processes"),
    _m("process_start_time_seconds", "gauge", (), "all processes"),
)

EXPORTED: dict[str, Metric] = {m.name: m for m in METRICS}

# Labels that label values can take on every series without the process setting them: Prometheus
# target labels and the chart's ServiceMonitor relabelings (service/component from the pod's
# app.kubernetes.io/component label, which the processes' own `service` label overrides).
TARGET_LABELS: frozenset[str] = frozenset(
    {"job", "instance", "service", "component", "namespace", "pod", "container", "endpoint"}
)

# Series Prometheus synthesizes for every target.
SYNTHETIC: frozenset[str] = frozenset({"up", "scrape_duration_seconds", "scrape_samples_scraped"})


def resolve(series: str) -> tuple[Metric, frozenset[str]] | None:
    """The metric a series name belongs to, with the labels valid on that series."""
    if series in EXPORTED and EXPORTED[series].type != "histogram":
        metric = EXPORTED[series]
        return metric, metric.labels
    for suffix in ("_bucket", "_sum", "_count"):
        base = series.removesuffix(suffix)
        if base != series and base in EXPORTED and EXPORTED[base].type == "histogram":
            metric = EXPORTED[base]
            labels = metric.labels | {"le"} if suffix == "_bucket" else metric.labels
            return metric, labels
    return None


ALL_LABELS: frozenset[str] = frozenset().union(*(m.labels for m in METRICS)) | TARGET_LABELS | {"le"}
