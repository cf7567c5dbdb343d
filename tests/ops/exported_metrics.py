"""The Prometheus metrics the services export: the one list dashboards and alerts are checked against.

Two tests keep it honest from both sides:

- tests/ops/test_dashboard_metrics.py (static): every metric and label that
  deploy/helm/bookmarks-platform/files/{dashboard.json,rules.yml} use is listed here;
- tests/ops/test_exported_metrics_live.py (running stack): every metric listed here is registered, with
  its type, in the real ``/metrics`` of each process named in ``processes``, its series carry exactly
  the listed labels, and every series the dashboard and rules use is really exported.

``processes`` names devstack's service processes (``devstack.stack.SERVICES``): gateway, auth,
bookmarks, enrichment (the API) and enrichment-worker. ``on_event`` marks metrics whose series only
appear once something happened that no process start can anticipate (the first event applied, the
relay leading its database): only their registration (``# HELP``/``# TYPE``) is required live. Counters of
exceptional events (a rejection, a dead letter) are not among them: every process starts them at 0 for
each known label value.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from promql import analyse

REPO_ROOT = Path(__file__).resolve().parents[2]
MONITORING_FILES = REPO_ROOT / "deploy" / "helm" / "bookmarks-platform" / "files"
RULES_FILE = MONITORING_FILES / "rules.yml"
DASHBOARD_FILE = MONITORING_FILES / "dashboard.json"

ALL_PROCESSES = frozenset({"gateway", "auth", "bookmarks", "enrichment", "enrichment-worker"})
OUTBOX_PROCESSES = frozenset({"auth", "bookmarks", "enrichment", "enrichment-worker"})
CONSUMER_PROCESSES = frozenset({"gateway", "bookmarks", "enrichment"})
ENRICHMENT_PROCESSES = frozenset({"enrichment", "enrichment-worker"})


@dataclass(frozen=True)
class Metric:
    name: str
    type: str  # counter | gauge | histogram
    labels: frozenset[str]
    processes: frozenset[str]  # the processes whose /metrics export it
    on_event: bool = False  # series only after an exceptional event; registration is what a live run can see

    @property
    def exported_by(self) -> str:
        """For humans: which processes export it."""
        return ", ".join(sorted(self.processes))


def _m(
    name: str, type_: str, labels: tuple[str, ...], processes: frozenset[str] | str, *, on_event: bool = False
) -> Metric:
    procs = frozenset({processes}) if isinstance(processes, str) else processes
    assert procs <= ALL_PROCESSES, procs
    return Metric(name, type_, frozenset(labels), procs, on_event)


METRICS: tuple[Metric, ...] = (
    # --- every process -----------------------------------------------------------------------
    _m("http_request_duration_seconds", "histogram", ("service", "method", "route", "status"), ALL_PROCESSES),
    _m("http_requests_in_flight", "gauge", ("service",), ALL_PROCESSES),
    _m("http_server_refusals_total", "counter", ("service", "reason"), ALL_PROCESSES),
    # --- outbox relay (auth, bookmarks, enrichment API and worker: one relay per database leads) ----
    _m("outbox_pending_events", "gauge", ("service",), OUTBOX_PROCESSES),
    _m("outbox_oldest_pending_age_seconds", "gauge", ("service",), OUTBOX_PROCESSES),
    _m("outbox_published_total", "counter", ("service", "topic"), OUTBOX_PROCESSES),
    _m("outbox_republished_total", "counter", ("service",), OUTBOX_PROCESSES),
    # the leading relay only (a standby replica has no series): registration is what is always there
    _m("events_source_newest_seconds", "gauge", ("service", "topic"), OUTBOX_PROCESSES, on_event=True),
    # --- database deadlines (every process with a database) ---------------------------------------
    _m("db_deadlines_exceeded_total", "counter", ("service", "phase"), OUTBOX_PROCESSES, on_event=True),
    # --- broker reachability (every process; a metric, not readiness) ----------------------------
    _m("kafka_broker_reachable", "gauge", ("service",), ALL_PROCESSES),
    # --- consumers (bookmarks and enrichment: ConsumerRunner; gateway: its topic tails) ---------
    _m("kafka_consumer_lag", "gauge", ("service", "topic", "partition"), CONSUMER_PROCESSES),
    _m("events_processed_total", "counter", ("service", "topic", "outcome"), CONSUMER_PROCESSES),
    _m(
        "events_dead_lettered_total",
        "counter",
        ("service", "topic"),
        frozenset({"bookmarks", "enrichment"}),
    ),
    _m(
        "events_applied_newest_seconds",
        "gauge",
        ("service", "topic"),
        frozenset({"bookmarks", "enrichment"}),
        on_event=True,
    ),
    # --- bookmarks ---------------------------------------------------------------------------
    _m("delta_page_records", "histogram", ("service",), "bookmarks"),
    _m("bookmarks_trash_purged_total", "counter", ("reason",), "bookmarks"),
    _m("bookmarks_trash_restored_total", "counter", (), "bookmarks"),
    # --- enrichment --------------------------------------------------------------------------
    _m("enrichment_jobs", "gauge", ("status",), "enrichment-worker"),
    _m("enrichment_job_transitions_total", "counter", ("status",), ENRICHMENT_PROCESSES),
    _m("enrichment_oldest_pending_job_age_seconds", "gauge", (), "enrichment-worker"),
    _m("enrichment_attempt_duration_seconds", "histogram", ("outcome",), "enrichment-worker"),
    _m("enrichment_fetch_errors_total", "counter", ("code",), ENRICHMENT_PROCESSES),
    _m("enrichment_cache_lookups_total", "counter", ("result",), ENRICHMENT_PROCESSES),
    _m("enrichment_quota_rejections_total", "counter", ("kind",), ENRICHMENT_PROCESSES),
    _m("enrichment_preview_requests_total", "counter", ("result",), ENRICHMENT_PROCESSES),
    _m("enrichment_preview_fetch_duration_seconds", "histogram", ("result",), ENRICHMENT_PROCESSES),
    # link health: the worker's link checker (LINK_CHECK_ENABLED)
    _m("enrichment_link_checks_total", "counter", ("result",), "enrichment-worker"),
    _m("enrichment_link_checks_due", "gauge", (), "enrichment-worker"),
    _m("enrichment_link_check_oldest_due_seconds", "gauge", (), "enrichment-worker"),
    _m("enrichment_link_check_interval_seconds", "gauge", (), "enrichment-worker"),
    # anti-entropy of the bookmark-URL projection: the enrichment API (ANTI_ENTROPY_INTERVAL_SECONDS > 0)
    _m("anti_entropy_repaired_records_total", "counter", ("service", "projection"), "enrichment"),
    _m("anti_entropy_checks_total", "counter", ("service", "projection", "outcome"), "enrichment"),
    _m("anti_entropy_last_completed_timestamp_seconds", "gauge", ("service", "projection"), "enrichment"),
    # --- gateway -----------------------------------------------------------------------------
    _m("gateway_websocket_connections", "gauge", (), "gateway"),
    _m("gateway_nudge_latency_seconds", "histogram", (), "gateway"),
    _m("gateway_nudges_sent_total", "counter", (), "gateway"),
    _m("gateway_rate_limited_total", "counter", ("scope",), "gateway"),
    _m("gateway_upstream_errors_total", "counter", ("upstream", "kind"), "gateway"),
    _m("gateway_websocket_rejected_total", "counter", ("reason",), "gateway"),
    _m("gateway_denied_users", "gauge", (), "gateway"),
    # --- auth --------------------------------------------------------------------------------
    _m("auth_sessions_issued_total", "counter", ("service", "method"), "auth"),
    _m("auth_refresh_token_reuse_total", "counter", ("service",), "auth"),
    # --- prometheus-client default collectors (served with the default registry, Linux) -------
    _m("process_cpu_seconds_total", "counter", (), ALL_PROCESSES),
    _m("process_resident_memory_bytes", "gauge", (), ALL_PROCESSES),
    _m("process_virtual_memory_bytes", "gauge", (), ALL_PROCESSES),
    _m("process_open_fds", "gauge", (), ALL_PROCESSES),
    _m("process_max_fds", "gauge", (), ALL_PROCESSES),
    _m("process_start_time_seconds", "gauge", (), ALL_PROCESSES),
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


# --- what the dashboard and the alert/recording rules use ----------------------------------------


def rules() -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(RULES_FILE.read_text())["groups"] for rule in group["rules"]]


def dashboard_expressions() -> list[tuple[str, str]]:
    """``(where, expr)`` of every dashboard panel target and ``label_values`` variable."""
    dashboard = json.loads(DASHBOARD_FILE.read_text())
    found: list[tuple[str, str]] = []

    def walk(panels: list[dict[str, Any]]) -> None:
        for panel in panels:
            for target in panel.get("targets", []):
                found.append((f"panel {panel['title']!r}", target["expr"]))
            walk(panel.get("panels", []))

    walk(dashboard["panels"])
    for var in dashboard.get("templating", {}).get("list", []):
        query = var.get("query")
        text = query.get("query") if isinstance(query, dict) else None
        m = re.fullmatch(r"label_values\((.+),\s*([a-zA-Z_]\w*)\)", text or "")
        if m:
            found.append((f"variable {var['name']!r}", m.group(1)))
    return found


def monitoring_expressions() -> list[tuple[str, str]]:
    """``(where, expr)`` of every rule and every dashboard query."""
    return [(f"rule {r.get('alert') or r.get('record')!r}", r["expr"]) for r in rules()] + dashboard_expressions()


def monitoring_series() -> dict[str, list[str]]:
    """Series names the dashboard and rules select (recording-rule outputs and synthetic series
    excluded), each with where it is used."""
    recorded = {r["record"] for r in rules() if "record" in r}
    used: dict[str, list[str]] = {}
    for where, expr in monitoring_expressions():
        for selector in analyse(expr).selectors:
            if selector.name and selector.name not in recorded and selector.name not in SYNTHETIC:
                used.setdefault(selector.name, []).append(where)
    return used
