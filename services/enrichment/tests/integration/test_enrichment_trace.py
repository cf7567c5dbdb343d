"""One enrichment, traced from the enqueue request to the consumer of its completion event.

The enrichment API and worker run in this process (their real apps, on a fresh database of ``infra``, the
real broker) with an in-memory span exporter; the web page and the OpenAI-compatible server are local
fakes. The chain asserted:

    API SERVER "POST /v1/enrichment/enqueue"  (+ its SQL statements)
      ···link··· worker CONSUMER "enrichment attempt"
                   ├─ "fetch page" ─ CLIENT "GET" (the page's host)
                   ├─ "extract page"
                   ├─ "fetch thumbnail" ─ CLIENT "GET" (the image's host)
                   ├─ "analyze" ─ CLIENT "chat <model>"
                   └─ "store result" ─ SQL statements
                 … CONSUMER "consume enrichment.completed"  (the event's Kafka headers, same trace)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from enrichment_support import AuthUsers, Db, Site, consumer_started, enrichment_settings
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from common.consumer import ConsumerRunner
from common.db import create_engine, create_session_factory
from common.events import TOPIC_ENRICHMENT_COMPLETED, EnrichmentCompleted
from common.tracing import setup_tracing
from devstack.testing import eventually, serve_app
from enrichment.main import create_app
from enrichment.worker.app import create_worker_app

pytestmark = pytest.mark.timeout(600)

MODEL = "trace-model"
ANSWER = {
    "summary": "The guide explains how sourdough rises with wild yeast. It lists the steps of a first loaf.",
    "saveWhy": "A clear starting point for baking sourdough bread at home.",
    "tags": ["sourdough", "baking"],
}


@pytest.fixture(scope="module")
def exporter() -> InMemorySpanExporter:
    memory = InMemorySpanExporter()
    setup_tracing("enrichment-trace-test", None, extra_processors=[SimpleSpanProcessor(memory)])
    return memory


@pytest.fixture(scope="module")
def fake_llm() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 - http.server's API
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            body = json.dumps(
                {
                    "id": "chatcmpl-trace",
                    "object": "chat.completion",
                    "created": 0,
                    "model": MODEL,
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": json.dumps(ANSWER)},
                        }
                    ],
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@contextlib.asynccontextmanager
async def completion_consumer(infra: Any, db_url: str, seen: list[EnrichmentCompleted]) -> AsyncIterator[None]:
    """A consumer of enrichment.completed, as the bookmarks service runs one."""
    engine = create_engine(db_url, pool_size=2)

    async def handle(session: Any, event: EnrichmentCompleted) -> None:
        seen.append(event)

    runner = ConsumerRunner(
        service="trace-test-completions",
        bootstrap=infra.kafka_bootstrap,
        sessions=create_session_factory(engine),
        handlers={TOPIC_ENRICHMENT_COMPLETED: handle},
        group_id=f"trace-test-{uuid.uuid4().hex}",
    )
    task = asyncio.create_task(runner.run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await engine.dispose()


def _is_sql(span: ReadableSpan) -> bool:
    return span.kind is SpanKind.CLIENT and (span.attributes or {}).get("db.system.name") == "postgresql"


def _children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


def _descendants(spans: list[ReadableSpan], root: ReadableSpan) -> list[ReadableSpan]:
    found, frontier = [], [root]
    while frontier:
        children = [c for p in frontier for c in _children(spans, p)]
        found += children
        frontier = children
    return found


def _one(spans: list[ReadableSpan], name: str, **where: Any) -> ReadableSpan:
    matching = [s for s in spans if s.name == name and all(getattr(s, k) == v for k, v in where.items())]
    assert len(matching) == 1, f"{name}: {len(matching)} spans; all: {sorted({s.name for s in spans})}"
    return matching[0]


async def test_one_enrichment_is_traced_from_the_enqueue_request_to_its_completion_event(
    infra: Any, auth_url: str, users: AuthUsers, site: Site, fake_llm: str, exporter: InMemorySpanExporter
) -> None:
    db = Db(infra.fresh_database("enrichment"))
    settings = enrichment_settings(
        infra, db.url, auth_url=auth_url, openai_api_key="test-key", openai_base_url=fake_llm, llm_model=MODEL
    )
    api_app = create_app(settings, consumer_group=f"enrichment-{uuid.uuid4()}")
    user = await users.create(use_ai=True)
    bookmark = f"bm-{uuid.uuid4().hex[:10]}"
    url = site.url(f"/article/{uuid.uuid4().hex[:8]}")
    seen: list[EnrichmentCompleted] = []
    try:
        async with serve_app(api_app) as api_url, completion_consumer(infra, db.url, seen):
            import httpx

            await eventually(lambda: consumer_started(api_app), timeout=60)
            async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
                body = {"clientBookmarkId": bookmark, "url": url, "clientSavedAt": "2030-05-01T10:00:00Z"}

                # Consent reaches the API as an event from auth: refused until then (traces of their own).
                async def enqueued() -> bool:
                    response = await http.post("/v1/enrichment/enqueue", json=body, headers=user.headers)
                    return response.status_code == 202

                await eventually(enqueued, timeout=60)
            async with serve_app(create_worker_app(settings)):

                async def completed() -> bool:
                    return any(e.clientBookmarkId == bookmark for e in seen)

                await eventually(completed, timeout=120)
                await asyncio.sleep(0.5)  # the consumer's span ends after its handler
    finally:
        await db.close()

    spans = list(exporter.get_finished_spans())
    attempt = _one(spans, "enrichment attempt", kind=SpanKind.CONSUMER)
    assert attempt.links, "the attempt is not linked to the request that created the job"
    origin_trace = attempt.links[0].context.trace_id
    requests = [s for s in spans if s.kind is SpanKind.SERVER and s.context.trace_id == origin_trace]
    enqueue = _one(requests, "POST /v1/enrichment/enqueue")  # (auth's entitlements lookup joins the trace too)
    assert any(_is_sql(s) for s in _descendants(spans, enqueue)), "the enqueue request has no SQL spans"

    inside = _descendants(spans, attempt)
    fetch = _one(inside, "fetch page")
    get = _one(_children(spans, fetch), "GET", kind=SpanKind.CLIENT)
    assert (get.attributes or {})["server.address"] == "127.0.0.1"
    assert (get.attributes or {})["http.response.status_code"] == 200
    _one(inside, "extract page")
    thumbnail = _one(inside, "fetch thumbnail")
    thumbnail_get = _one(_children(spans, thumbnail), "GET", kind=SpanKind.CLIENT)
    assert (thumbnail_get.attributes or {})["http.response.status_code"] == 200
    analyze = _one(inside, "analyze")
    assert (analyze.attributes or {})["enrichment.summary_source"] == "llm"
    _one(_children(spans, analyze), f"chat {MODEL}", kind=SpanKind.CLIENT)
    store = _one(inside, "store result")
    statements = [s for s in _descendants(spans, store) if _is_sql(s)]
    assert statements, "storing the result has no SQL spans"
    assert all(s.context.trace_id == attempt.context.trace_id for s in inside)

    consumed = [
        s
        for s in spans
        if s.name == f"consume {TOPIC_ENRICHMENT_COMPLETED}" and s.context.trace_id == attempt.context.trace_id
    ]
    assert consumed, "the completion event's consumer span is not in the attempt's trace"
    assert all(s.parent is not None for s in spans if _is_sql(s)), "a SQL span without a parent was recorded"
