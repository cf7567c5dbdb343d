"""Dashboards and alerts only use metrics (and labels) the services export; alerts are complete."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from exported_metrics import ALL_LABELS, EXPORTED, SYNTHETIC, TARGET_LABELS, resolve
from promql import analyse

REPO_ROOT = Path(__file__).resolve().parents[2]
FILES = REPO_ROOT / "deploy" / "helm" / "bookmarks-platform" / "files"
RULES = FILES / "rules.yml"
DASHBOARD = FILES / "dashboard.json"
RULES_TEST = REPO_ROOT / "deploy" / "prometheus" / "rules_test.yml"
README = REPO_ROOT / "deploy" / "README.md"


def _rules() -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


def _alerts() -> list[dict[str, Any]]:
    return [r for r in _rules() if "alert" in r]


def _dashboard_exprs() -> list[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD.read_text())
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


def _all_exprs() -> list[tuple[str, str]]:
    return [(f"rule {r.get('alert') or r.get('record')!r}", r["expr"]) for r in _rules()] + _dashboard_exprs()


def test_expressions_found() -> None:
    # Guard against the extraction silently finding nothing.
    assert len(_dashboard_exprs()) >= 25
    assert len(_alerts()) >= 8


@pytest.mark.parametrize(("where", "expr"), _all_exprs(), ids=lambda v: v if len(v) < 60 else v[:57] + "...")
def test_every_metric_and_label_is_exported(where: str, expr: str) -> None:
    recorded = {r["record"] for r in _rules() if "record" in r}
    usage = analyse(expr)
    assert usage.selectors, f"{where}: no series selector found in {expr!r}"
    for selector in usage.selectors:
        name = selector.name
        assert name, f"{where}: selector without a metric name in {expr!r}"
        if name in recorded or name in SYNTHETIC:
            continue
        resolved = resolve(name)
        assert resolved is not None, f"{where}: {name!r} is not exported by any service (tests/ops/exported_metrics.py)"
        metric, labels = resolved
        for label, _op, _value in selector.matchers:
            assert label in labels | TARGET_LABELS, f"{where}: {name} has no label {label!r} (it has {sorted(labels)})"
    unknown = usage.grouping_labels - ALL_LABELS
    assert not unknown, f"{where}: grouping by labels no metric has: {sorted(unknown)}"


def test_every_service_metric_is_on_the_dashboard_or_an_alert() -> None:
    """Metrics the services define themselves; the client library's process_* defaults are optional."""
    used = {s.name for _, expr in _all_exprs() for s in analyse(expr).selectors}
    histogram_series = {f"{name}_{suffix}" for name in EXPORTED for suffix in ("bucket", "count", "sum")}
    shown = {name for name in EXPORTED if name in used or histogram_series & used & {f"{name}_bucket", f"{name}_count"}}
    hidden = sorted(name for name in set(EXPORTED) - shown if not name.startswith("process_"))
    assert not hidden, f"exported but on no panel or alert: {hidden}"


def test_promql_analysis_understands_the_constructs_we_use() -> None:
    usage = analyse(
        'sum by (service, le) (rate(foo_bucket{service=~"$service", route!~"/a|/b"}[$__rate_interval]))'
        " / on (service) group_left sum(bar) or baz unless qux offset 15m"
    )
    assert [s.name for s in usage.selectors] == ["foo_bucket", "bar", "baz", "qux"]
    assert usage.selectors[0].matchers == [("service", "=~", "$service"), ("route", "!~", "/a|/b")]
    assert usage.grouping_labels == {"service", "le"}


def test_histograms_and_counters_resolve() -> None:
    bucket = resolve("http_request_duration_seconds_bucket")
    assert bucket is not None and "le" in bucket[1]
    assert resolve("http_request_duration_seconds") is None  # a histogram has no bare series
    assert resolve("enrichment_fetch_errors_total") is not None
    assert resolve("nonexistent_metric") is None
    assert all(m.type in {"counter", "gauge", "histogram"} for m in EXPORTED.values())
    assert all(m.name.endswith("_total") for m in EXPORTED.values() if m.type == "counter")


# --- alert completeness ------------------------------------------------------------------------

REQUIRED_ALERTS = {
    # what the issue asks for -> the metric that must drive it
    "5xx ratio per service": "http_request_duration_seconds_count",
    "p99 latency per service": "http_request_duration_seconds_bucket",
    "consumer lag": "kafka_consumer_lag",
    "outbox backlog age": "outbox_oldest_pending_age_seconds",
    "dead-lettered events": "events_dead_lettered_total",
    "enrichment failure ratio": "enrichment_job_transitions_total",
    "oldest pending job age": "enrichment_oldest_pending_job_age_seconds",
    "websocket nudge lag": "gateway_nudge_latency_seconds_bucket",
    "database not answering within its deadlines": "db_deadlines_exceeded_total",
}


@pytest.mark.parametrize("purpose", sorted(REQUIRED_ALERTS))
def test_required_alert_exists(purpose: str) -> None:
    metric = REQUIRED_ALERTS[purpose]
    users = [a["alert"] for a in _alerts() if metric in {s.name for s in analyse(a["expr"]).selectors}]
    assert users, f"no alert for {purpose} (uses {metric})"


@pytest.mark.parametrize("alert", [a["alert"] for a in _alerts()])
def test_alert_has_annotations_severity_and_runbook(alert: str) -> None:
    rule = next(a for a in _alerts() if a["alert"] == alert)
    annotations = rule.get("annotations", {})
    for key in ("summary", "description", "runbook"):
        assert annotations.get(key, "").strip(), f"{alert}: missing annotation {key}"
    assert rule.get("labels", {}).get("severity") in {"critical", "warning"}
    anchor = annotations["runbook"].split("#", 1)[1]
    headings = {
        re.sub(r"[^a-z0-9 _-]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in README.read_text().splitlines()
        if line.startswith("#")
    }
    assert anchor in headings, f"{alert}: runbook anchor #{anchor} has no heading in deploy/README.md"


@pytest.mark.parametrize("alert", [a["alert"] for a in _alerts()])
def test_every_alert_has_a_firing_promtool_test(alert: str) -> None:
    tests = yaml.safe_load(RULES_TEST.read_text())["tests"]
    firing = [
        case
        for test in tests
        for case in test.get("alert_rule_test", [])
        if case["alertname"] == alert and case.get("exp_alerts")
    ]
    assert firing, f"{alert}: no promtool case expects it to fire (deploy/prometheus/rules_test.yml)"


def test_standalone_rules_file_is_the_chart_file() -> None:
    assert (REPO_ROOT / "deploy" / "prometheus" / "rules.yml").read_bytes() == RULES.read_bytes()
