"""A real Prometheus server scrapes every process of a running stack, and the key metrics arrive.

Prometheus (Debian package ``prometheus``; ``.tools/bin`` or PATH) runs with a generated configuration
(one job per process, named after it, labelled as the chart's ServiceMonitor labels its targets:
``service`` and ``component`` from the pod's component, the process's own labels honoured), its own
storage directory and a free loopback port. The tests wait, through the Prometheus HTTP API, until every
target is up, then:

- evaluate every dashboard query and alert expression before any request of theirs (an idle stack): none
  may fail, every metric they name must have series, and every panel must show a number;
- make a few requests through the gateway while holding a WebSocket open and query the stored series of
  each service;
- evaluate everything again, now also requiring the series that only the first event creates.

The server is stopped at the end, whatever happened (no leaked process).
"""

from __future__ import annotations

import math
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from _support import find_tool
from exported_metrics import SYNTHETIC, dashboard_expressions, resolve, rules
from promql import analyse
from websockets.sync.client import connect as ws_connect

pytestmark = pytest.mark.timeout(900)  # includes starting the whole stack on a busy machine

PROCESSES = ("gateway", "auth", "bookmarks", "enrichment", "enrichment-worker")
# The pod label app.kubernetes.io/component of each process in the chart (deploy/helm: servicemonitor.yaml).
COMPONENTS = {
    "gateway": "gateway",
    "auth": "auth",
    "bookmarks": "bookmarks",
    "enrichment": "enrichment-api",
    "enrichment-worker": "enrichment-worker",
}
SCRAPE_INTERVAL = "2s"
# What Grafana puts in place of the dashboard's variables ($__rate_interval: four scrape intervals and more).
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$service": ".*"}


def _free_port() -> int:
    from devstack.stack import free_port

    return free_port()


def _target(metrics_url: str) -> str:
    return metrics_url.removeprefix("http://").removesuffix("/metrics")


def _wait(check: Callable[[], Any], *, timeout: float, what: str, interval: float = 0.5) -> Any:
    """Poll ``check`` until it returns something truthy; the last value is shown on failure."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"{what} not reached within {timeout:.0f} s; last: {last!r}")


class Prometheus:
    def __init__(self, url: str, process: subprocess.Popen[bytes], log: Path) -> None:
        self.url = url
        self.process = process
        self.log = log
        self.http = httpx.Client(base_url=url, timeout=30.0, trust_env=False)

    def api(self, path: str, **params: str) -> Any:
        assert self.process.poll() is None, f"prometheus exited ({self.process.returncode}):\n{self.log_tail()}"
        response = self.http.get(f"/api/v1/{path}", params=params)
        response.raise_for_status()
        body = response.json()
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector", data
        return list(data["result"])

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""


@pytest.fixture(scope="module")
def prometheus(full_stack: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    binary = find_tool("prometheus")
    if binary is None:
        pytest.skip("prometheus not installed (apt-get install prometheus, or deploy/install-tools.sh)")
    workdir = tmp_path_factory.mktemp("prometheus")
    config = {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "scrape_timeout": SCRAPE_INTERVAL},
        "scrape_configs": [
            {
                "job_name": process,
                "metrics_path": "/metrics",
                # As the ServiceMonitor: the process's own `service` label wins over the target's.
                "honor_labels": True,
                # The metrics listener: /metrics is not served on the client-facing port of any process.
                "static_configs": [
                    {
                        "targets": [_target(full_stack.metrics_url(process))],
                        "labels": {"service": COMPONENTS[process], "component": COMPONENTS[process]},
                    }
                ],
            }
            for process in PROCESSES
        ],
    }
    config_file = workdir / "prometheus.yml"
    config_file.write_text(yaml.safe_dump(config))
    port = _free_port()
    log = workdir / "prometheus.log"
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config_file}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    server = Prometheus(f"http://127.0.0.1:{port}", process, log)
    try:

        def ready() -> bool:
            assert process.poll() is None, f"prometheus exited ({process.returncode}):\n{server.log_tail()}"
            try:
                return server.http.get("/-/ready").status_code == 200
            except httpx.HTTPError:
                return False

        _wait(ready, timeout=120, what="prometheus /-/ready")
        yield server
    finally:
        server.http.close()
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
        assert process.poll() is not None


def _grafana(expr: str) -> str:
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    return expr


def _wait_until_scraped(prometheus: Prometheus) -> None:
    """Every target up, with enough samples stored for a rate over the dashboard's interval."""
    health: dict[str, tuple[str, str | None]] = {}

    def all_up() -> bool:
        health.clear()
        for target in prometheus.api("targets", state="active")["activeTargets"]:
            health[target["labels"]["job"]] = (target["health"], target.get("lastError"))
        return set(health) == set(PROCESSES) and all(h == "up" for h, _ in health.values())

    try:
        _wait(all_up, timeout=180, what="every target up")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; targets: {health}") from None

    def scraped_enough() -> bool:
        found = {r["metric"]["job"] for r in prometheus.query("count_over_time(up[1m]) >= 4")}
        return found == set(PROCESSES)

    _wait(scraped_enough, timeout=120, what="four scrapes of every target")


def _problems_of(prometheus: Prometheus, where: str, expr: str, *, panel: bool, after_events: bool) -> list[str]:
    """What is wrong with one dashboard query or alert expression, evaluated now."""
    problems: list[str] = []
    response = prometheus.http.get("/api/v1/query", params={"query": _grafana(expr)})
    if response.status_code != 200:
        return [f"{where}: Prometheus refused {expr!r}: {response.text}"]
    result = response.json()["data"]["result"]
    if panel and not result:
        problems.append(f"{where}: no series (the panel would say No data): {expr!r}")
    if panel and any(math.isnan(float(r["value"][1])) for r in result):
        problems.append(f"{where}: NaN in {result!r}")
    recorded = {r["record"] for r in rules() if "record" in r}
    for selector in analyse(expr).selectors:
        name = selector.name
        if not name or name in recorded or name in SYNTHETIC:
            continue
        resolved = resolve(name)
        if resolved is None:
            problems.append(f"{where}: {name} is not exported by any service")
            continue
        if resolved[0].on_event and not after_events:
            continue
        if not prometheus.query(f'group({{__name__="{name}"}})'):
            problems.append(f"{where}: Prometheus has no series of {name}")
    return problems


def _check_every_expression(prometheus: Prometheus, *, after_events: bool) -> None:
    expressions = [(f"alert {r['alert']!r}", r["expr"], False) for r in rules() if "alert" in r]
    expressions += [(f"rule {r['record']!r}", r["expr"], True) for r in rules() if "record" in r]
    expressions += [(where, expr, True) for where, expr in dashboard_expressions()]
    assert len(expressions) > 40, "the dashboard and rules were not found"
    problems: list[str] = []
    for where, expr, panel in expressions:
        problems += _problems_of(prometheus, where, expr, panel=panel, after_events=after_events)
    assert not problems, "\n".join(problems)


def test_every_dashboard_query_and_alert_evaluates_with_series_on_an_idle_stack(
    full_stack: Any, prometheus: Prometheus
) -> None:
    _wait_until_scraped(prometheus)
    _check_every_expression(prometheus, after_events=False)


def test_labelled_counters_of_exceptional_events_exist_at_zero_from_start(
    full_stack: Any, prometheus: Prometheus
) -> None:
    _wait_until_scraped(prometheus)
    expected = {
        'events_dead_lettered_total{service="bookmarks"}': "bookmarks",
        'events_dead_lettered_total{service="enrichment"}': "enrichment",
        'gateway_rate_limited_total{scope="ip"}': "gateway",
        'gateway_rate_limited_total{scope="image"}': "gateway",
        'gateway_rate_limited_total{scope="user"}': "gateway",
        'gateway_upstream_errors_total{upstream="bookmarks",kind="timeout"}': "gateway",
        'enrichment_quota_rejections_total{kind="month"}': "enrichment",
        'enrichment_fetch_errors_total{code="too-large"}': "enrichment-worker",
        'enrichment_cache_lookups_total{result="hit"}': "enrichment",
        'http_server_refusals_total{service="gateway",reason="websocket-handshake"}': "gateway",
        'http_server_refusals_total{service="enrichment-worker",reason="headers-too-large"}': "enrichment-worker",
    }
    for expr, job in expected.items():
        jobs = {r["metric"]["job"] for r in prometheus.query(expr)}
        assert job in jobs, f"{expr}: no series from {job} (found {sorted(jobs)})"


def _exercise(gateway_url: str) -> dict[str, str]:
    """Requests through the gateway that every service answers; the Authorization header of the user."""
    with httpx.Client(base_url=gateway_url, timeout=60.0, trust_env=False) as client:
        session = client.post("/v1/auth/anonymous")
        assert session.status_code == 200, session.text
        headers = {"Authorization": f"Bearer {session.json()['accessToken']}"}
        assert client.patch("/v1/me/settings", json={"useAi": True}, headers=headers).status_code == 200
        assert (
            client.put(
                "/v1/bookmarks/scraped", json={"url": "https://example.com/scraped"}, headers=headers
            ).status_code
            == 200
        )
        assert client.get("/v1/bookmarks/delta", headers=headers).status_code == 200
        status = client.get("/v1/enrichment/status", params={"clientBookmarkId": "scraped"}, headers=headers)
        assert status.status_code in (200, 404), status.text
        return headers


def test_prometheus_scrapes_every_process_and_stores_the_key_metrics(full_stack: Any, prometheus: Prometheus) -> None:
    health: dict[str, tuple[str, str | None]] = {}

    def all_up() -> bool:
        health.clear()
        for target in prometheus.api("targets", state="active")["activeTargets"]:
            health[target["labels"]["job"]] = (target["health"], target.get("lastError"))
        return set(health) == set(PROCESSES) and all(h == "up" for h, _ in health.values())

    try:
        _wait(all_up, timeout=180, what="every target up")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; targets: {health}") from None

    headers = _exercise(full_stack.gateway_url)
    ws_url = full_stack.gateway_url.replace("http://", "ws://", 1) + "/v1/events"
    with ws_connect(ws_url, additional_headers=headers, proxy=None, open_timeout=30):
        # Stored by Prometheus while the socket is open (the gateway's own gauge, scraped).
        _wait(
            lambda: [
                r for r in prometheus.query('gateway_websocket_connections{job="gateway"}') if float(r["value"][1]) >= 1
            ],
            timeout=120,
            what="gateway_websocket_connections >= 1 in Prometheus",
        )

    expectations = {
        # every process serves HTTP and is scraped
        "up == 1": set(PROCESSES),
        'http_request_duration_seconds_count{service="bookmarks",route="/v1/bookmarks/{clientBookmarkId}",method="PUT"} > 0': {
            "bookmarks"
        },
        'http_request_duration_seconds_count{service="bookmarks",route="/v1/bookmarks/delta"} > 0': {"bookmarks"},
        'http_request_duration_seconds_count{service="auth",route="/v1/me/settings"} > 0': {"auth"},
        'http_request_duration_seconds_count{service="gateway"} > 0': {"gateway"},
        'http_request_duration_seconds_count{service="enrichment",route="/v1/enrichment/status"} > 0': {"enrichment"},
        'http_request_duration_seconds_count{service="enrichment-worker"} > 0': {"enrichment-worker"},
        # outbox relays: auth and bookmarks each lead their database; API or worker leads enrichment's
        'outbox_pending_events{service=~"auth|bookmarks"}': {"auth", "bookmarks"},
        'delta_page_records_count{service="bookmarks"} > 0': {"bookmarks"},
        'events_processed_total{service="gateway",topic="bookmark.saved"} > 0': {"gateway"},
        "enrichment_jobs": {"enrichment-worker"},
        "enrichment_oldest_pending_job_age_seconds": {"enrichment-worker"},
        "gateway_websocket_connections": {"gateway"},
        "gateway_nudges_sent_total": {"gateway"},
        "process_resident_memory_bytes > 0": set(PROCESSES),
    }
    for expr, jobs in expectations.items():

        def arrived(expr: str = expr, jobs: set[str] = jobs) -> set[str] | None:
            found = {r["metric"].get("job", "") for r in prometheus.query(expr)}
            return found if jobs <= found else None

        try:
            _wait(arrived, timeout=120, what=f"{expr} from {sorted(jobs)}")
        except AssertionError:
            found = sorted({r["metric"].get("job", "") for r in prometheus.query(expr)})
            raise AssertionError(
                f"{expr}: expected series from {sorted(jobs)}, Prometheus has them from {found}"
            ) from None

    enrichment_outbox = prometheus.query('outbox_pending_events{job=~"enrichment|enrichment-worker"}')
    assert enrichment_outbox, "no outbox relay of the enrichment database reports outbox_pending_events"


def test_metrics_are_served_only_on_the_metrics_port(full_stack: Any) -> None:
    for process in PROCESSES:
        client_facing = httpx.get(full_stack.service_url(process) + "/metrics", timeout=30.0, trust_env=False)
        assert client_facing.status_code == 404, process
        assert client_facing.json() == {"code": "not-found", "message": "Not found."}, process
        scraped = httpx.get(full_stack.metrics_url(process), timeout=30.0, trust_env=False)
        assert scraped.status_code == 200 and "process_resident_memory_bytes" in scraped.text, process


def test_every_dashboard_query_and_alert_evaluates_with_series_after_traffic(
    full_stack: Any, prometheus: Prometheus
) -> None:
    """After the exercise above: the series that only a first event creates are required too."""
    _wait_until_scraped(prometheus)

    def settled() -> bool:
        try:
            _check_every_expression(prometheus, after_events=True)
        except AssertionError:
            return False
        return True

    if not _wait_quietly(settled, timeout=120):
        _check_every_expression(prometheus, after_events=True)  # fails, listing every problem


def _wait_quietly(check: Callable[[], bool], *, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(2.0)
    return False
