"""The list in exported_metrics.py against the real ``/metrics`` of every process of a running stack.

The static test (test_dashboard_metrics.py) proves the dashboard and the rules use only listed metrics;
this one proves the list is true: after a few requests that make labelled series exist (a session, a
bookmark, a delta page, a WebSocket, an enrichment through a local page, a cache hit), each process's
``/metrics`` (scraped directly, as Prometheus does) registers every metric it should, with the listed
type, and its series carry exactly the listed labels. Metrics whose series only follow an exceptional
event (``on_event``) count as exported when registered (``# HELP``/``# TYPE``: prometheus-client prints
them for every registered metric, labelled or not).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from exported_metrics import METRICS, Metric, monitoring_series, resolve
from prometheus_client.parser import text_string_to_metric_families
from websockets.sync.client import connect as ws_connect

pytestmark = pytest.mark.timeout(900)  # the first test also waits for the whole stack to start

PAGE = b"""<!doctype html><html lang="en"><head><title>Metrics page</title>
<meta name="description" content="A page enriched so that the enrichment metrics get series."></head>
<body><article><h1>Metrics page</h1>
<p>Prometheus scrapes metrics from every service of the platform over plain HTTP at regular intervals.</p>
<p>Dashboards and alert rules then query the stored series to show latency, errors and backlogs.</p>
<p>Every metric a dashboard uses must really be exported, or its panel stays empty when it matters.</p>
</article></body></html>"""

Families = dict[str, Any]  # family name -> prometheus_client Metric family


def _family_name(metric: Metric) -> str:
    # The parser names a counter's family without its `_total` suffix.
    return str(metric.name).removesuffix("_total") if metric.type == "counter" else str(metric.name)


def _sample_names(metric: Metric) -> set[str]:
    if metric.type == "histogram":
        return {f"{metric.name}_bucket", f"{metric.name}_count", f"{metric.name}_sum"}
    return {metric.name}


def _series(families: Families, metric: Metric) -> list[Any]:
    family = families.get(_family_name(metric))
    if family is None:
        return []
    names = _sample_names(metric)
    return [s for s in family.samples if s.name in names]


def scrape(metrics_url: str) -> Families:
    response = httpx.get(metrics_url, timeout=30.0, trust_env=False)
    response.raise_for_status()
    assert response.headers["content-type"].startswith("text/plain"), response.headers["content-type"]
    return {family.name: family for family in text_string_to_metric_families(response.text)}


def scrape_all(stack: Any) -> dict[str, Families]:
    processes = sorted({p for m in METRICS for p in m.processes})
    return {process: scrape(stack.metrics_url(process)) for process in processes}


def missing_series(scrapes: dict[str, Families]) -> list[str]:
    """Metrics expected to have series (not ``on_event``) that no process of theirs shows yet."""
    return [
        m.name
        for m in METRICS
        if not m.on_event and not any(_series(scrapes[p], m) for p in m.processes if p in scrapes)
    ]


@pytest.fixture(scope="module")
def local_page() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's API
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/metrics-page/{uuid.uuid4().hex}"
    server.shutdown()
    server.server_close()


def exercise(gateway_url: str, page_url: str) -> None:
    """A few ordinary requests through the gateway so that labelled series exist in every process."""
    with httpx.Client(base_url=gateway_url, timeout=60.0, trust_env=False) as client:

        def session() -> dict[str, str]:
            response = client.post("/v1/auth/anonymous")
            assert response.status_code == 200, response.text
            headers = {"Authorization": f"Bearer {response.json()['accessToken']}"}
            consent = client.patch("/v1/me/settings", json={"useAi": True}, headers=headers)
            assert consent.status_code == 200, consent.text
            return headers

        first, second = session(), session()
        for headers in (first, second):
            assert client.put("/v1/bookmarks/m1", json={"url": page_url}, headers=headers).status_code == 200
            assert client.get("/v1/bookmarks/delta", headers=headers).status_code == 200
        ws_url = gateway_url.replace("http://", "ws://", 1) + "/v1/events"
        with ws_connect(ws_url, additional_headers=first, proxy=None, open_timeout=30):
            assert client.get("/v1/me", headers=first).status_code == 200

        body = {"clientBookmarkId": "m1", "url": page_url, "clientSavedAt": "2026-01-01T00:00:00Z"}
        queued = client.post("/v1/enrichment/enqueue", json=body, headers=first)
        assert queued.status_code == 202, queued.text
        deadline = time.monotonic() + 180
        while True:
            status = client.get("/v1/enrichment/status", params={"clientBookmarkId": "m1"}, headers=first)
            assert status.status_code == 200, status.text
            if status.json()["data"]["status"] in ("completed", "failed"):
                break
            assert time.monotonic() < deadline, f"enrichment did not finish: {status.text}"
            time.sleep(0.5)
        hit = client.post("/v1/enrichment/enqueue", json=body, headers=second)
        assert hit.status_code in (200, 202), hit.text


@pytest.fixture(scope="module")
def scrapes(full_stack: Any, local_page: str) -> dict[str, Families]:
    exercise(full_stack.gateway_url, local_page)
    # Relays, consumers and the worker's gauges catch up in the background: wait for their series.
    deadline = time.monotonic() + 120
    while True:
        result = scrape_all(full_stack)
        missing = missing_series(result)
        if not missing or time.monotonic() > deadline:
            return result
        time.sleep(1.0)


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.name)
def test_listed_metric_is_registered_with_its_type(scrapes: dict[str, Families], metric: Metric) -> None:
    for process in sorted(metric.processes):
        family = scrapes[process].get(_family_name(metric))
        assert family is not None, f"{process} /metrics has no {metric.name} (no # HELP/# TYPE line)"
        assert family.type == metric.type, f"{process}: {metric.name} is a {family.type}, listed as {metric.type}"


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.name)
def test_listed_metric_has_series_with_the_listed_labels(scrapes: dict[str, Families], metric: Metric) -> None:
    found = {p: _series(scrapes[p], metric) for p in sorted(metric.processes)}
    if not metric.on_event:
        assert any(found.values()), f"{metric.name}: no series in {sorted(metric.processes)} after the exercise"
    for process, samples in found.items():
        for sample in samples:
            labels = set(sample.labels) - ({"le"} if sample.name.endswith("_bucket") else set())
            assert labels == set(metric.labels), (
                f"{process}: {sample.name} has labels {sorted(labels)}, listed {sorted(metric.labels)}"
            )


MONITORED = sorted(monitoring_series().items())


@pytest.mark.parametrize(("series", "where"), MONITORED, ids=[series for series, _ in MONITORED])
def test_every_series_the_dashboard_and_rules_use_is_exported(
    scrapes: dict[str, Families], series: str, where: list[str]
) -> None:
    resolved = resolve(series)
    assert resolved is not None, f"{series} (used by {where}) is not in exported_metrics.py"
    metric, _labels = resolved
    registered = [p for p in sorted(metric.processes) if _family_name(metric) in scrapes[p]]
    assert registered, f"{series} (used by {where}) appears in no process's /metrics"
    if not metric.on_event:
        with_series = [p for p in registered if any(s.name == series for s in scrapes[p][_family_name(metric)].samples)]
        assert with_series, f"{series} (used by {where}) has no series in {registered} after the exercise"
