"""One trace follows a write from the gateway into the bookmarks service, through Kafka, into a consumer.

The gateway and the bookmarks service run in this process (their real ``create_app``, served by uvicorn
on real ports) against the real PostgreSQL and broker of ``infra``; access tokens come from a
:class:`~devstack.testing.LocalJwksServer` playing the auth service's JWKS. An in-memory exporter is
installed with ``common.tracing.setup_tracing`` before the apps start, so it sees every span.

No component of this process consumes ``bookmark.saved`` with the common ``ConsumerRunner`` (the
gateway's nudge tail reads it without spans; the bookmarks service consumes other topics), so the test
runs a ``ConsumerRunner`` for it: that runner is the consumer under test, exactly as the enrichment
service runs it. The chain asserted, all in one trace:

    gateway SERVER "PUT /v1/bookmarks/{clientBookmarkId}"
      └─ gateway CLIENT "PUT bookmarks"                      (the proxied call, traceparent injected)
           └─ bookmarks SERVER "PUT /v1/bookmarks/{...}"     (context extracted from the HTTP headers)
                └─ … CONSUMER "consume bookmark.saved"       (context written to the outbox with the
                                                              change, published as Kafka headers)
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, SpanKind

from common.consumer import ConsumerRunner
from common.db import create_engine, create_session_factory
from common.events import TOPIC_BOOKMARK_SAVED, BookmarkSaved
from common.tracing import setup_tracing
from devstack.testing import LocalJwksServer, free_port, serve_app

pytestmark = pytest.mark.timeout(900)  # starting infra (PostgreSQL, broker, migrations) on a busy machine

ISSUER, AUDIENCE = "bookmarks-auth", "bookmarks-api"
ROUTE = "/v1/bookmarks/{clientBookmarkId}"


@pytest.fixture(scope="module")
def exporter() -> InMemorySpanExporter:
    memory = InMemorySpanExporter()
    setup_tracing("trace-test", None, extra_processors=[SimpleSpanProcessor(memory)])
    return memory


@pytest.fixture(scope="module")
def jwks() -> Iterator[LocalJwksServer]:
    server = LocalJwksServer(issuer=ISSUER, audience=AUDIENCE).start()
    yield server
    server.stop()


async def _wait(check: Any, *, timeout: float, what: str) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = None
    while loop.time() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(0.1)
    raise AssertionError(f"{what} not reached within {timeout:.0f} s (last: {last!r})")


@contextlib.asynccontextmanager
async def running_apps(infra: Any, jwks: LocalJwksServer) -> AsyncIterator[str]:
    """Bookmarks, then the gateway in front of it, both ready; yields the gateway's base URL."""
    from bookmarks.main import create_app as create_bookmarks
    from bookmarks.settings import Settings as BookmarksSettings
    from gateway.main import create_app as create_gateway
    from gateway.settings import Settings as GatewaySettings

    nowhere = f"http://127.0.0.1:{free_port()}"  # auth and enrichment are not part of this trace
    bookmarks_app = create_bookmarks(
        BookmarksSettings(
            database_url=infra.dsn("bookmarks"),
            kafka_bootstrap_servers=infra.kafka_bootstrap,
            auth_url=f"http://127.0.0.1:{jwks.port}",  # JWKS at <auth_url>/v1/auth/jwks; the server answers any path
        )
    )
    async with serve_app(bookmarks_app) as bookmarks_url:
        gateway_app = create_gateway(
            GatewaySettings(
                kafka_bootstrap_servers=infra.kafka_bootstrap,
                bookmarks_url=bookmarks_url,
                auth_url=nowhere,
                enrichment_url=nowhere,
                jwks_url_override=jwks.jwks_url,
            )
        )
        async with serve_app(gateway_app) as gateway_url, httpx.AsyncClient(trust_env=False, timeout=10) as client:

            async def ready() -> bool:
                answers = [(await client.get(f"{url}/readyz")).status_code for url in (bookmarks_url, gateway_url)]
                return answers == [200, 200]

            await _wait(ready, timeout=120, what="bookmarks and gateway ready")
            yield gateway_url


@contextlib.asynccontextmanager
async def bookmark_saved_consumer(infra: Any, received: list[BookmarkSaved]) -> AsyncIterator[ConsumerRunner]:
    # Its processed-event inbox lives in the enrichment database of infra (every service database has one).
    engine = create_engine(infra.dsn("enrichment"), pool_size=2)

    async def handle(session: Any, event: BookmarkSaved) -> None:
        received.append(event)

    runner = ConsumerRunner(
        service="trace-test-consumer",
        bootstrap=infra.kafka_bootstrap,
        sessions=create_session_factory(engine),
        handlers={TOPIC_BOOKMARK_SAVED: handle},
        group_id=f"trace-test-{uuid.uuid4().hex}",
    )
    task = asyncio.create_task(runner.run())
    try:
        yield runner
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await engine.dispose()


def _scope(span: ReadableSpan) -> str:
    return span.instrumentation_scope.name if span.instrumentation_scope is not None else ""


def _describe(spans: list[ReadableSpan]) -> str:
    return "\n".join(
        f"  {s.context.trace_id:032x} {s.context.span_id:016x} parent={s.parent.span_id if s.parent else 0:016x} "
        f"{s.kind.name} {_scope(s)} {s.name!r}"
        for s in spans
    )


@dataclass
class TracedWrite:
    spans: list[ReadableSpan]
    consume: ReadableSpan
    bookmark_id: str


@pytest.fixture(scope="module")
async def traced_write(infra: Any, jwks: LocalJwksServer, exporter: InMemorySpanExporter) -> TracedWrite:
    """One PUT through the gateway, run until the consumer has handled its bookmark.saved event."""
    received: list[BookmarkSaved] = []
    bookmark_id = f"traced-{uuid.uuid4().hex[:12]}"
    token = jwks.mint(sub=str(uuid.uuid4()), claims={"jti": uuid.uuid4().hex})

    async with running_apps(infra, jwks) as gateway_url, bookmark_saved_consumer(infra, received):
        exporter.clear()
        async with httpx.AsyncClient(base_url=gateway_url, trust_env=False, timeout=30) as client:
            response = await client.put(
                f"/v1/bookmarks/{bookmark_id}",
                json={"url": "https://example.com/traced"},
                headers={"Authorization": f"Bearer {token}"},
            )
        assert response.status_code == 200, response.text

        async def consumed() -> BookmarkSaved | None:
            return next((e for e in received if e.clientBookmarkId == bookmark_id), None)

        event = await _wait(consumed, timeout=120, what=f"bookmark.saved of {bookmark_id} consumed")

        async def consumer_span() -> ReadableSpan | None:
            return next(
                (
                    s
                    for s in exporter.get_finished_spans()
                    if s.kind is SpanKind.CONSUMER
                    and s.name == f"consume {TOPIC_BOOKMARK_SAVED}"
                    and (s.attributes or {}).get("messaging.message.id") == str(event.eventId)
                ),
                None,
            )

        consume = await _wait(consumer_span, timeout=30, what="the consumer span exported")
    return TracedWrite(spans=list(exporter.get_finished_spans()), consume=consume, bookmark_id=bookmark_id)


def _put_server_spans(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    """Every SERVER span any instrumentation made for the PUT (named and/or routed by its template)."""
    return [
        s
        for s in spans
        if s.kind is SpanKind.SERVER and (s.name == f"PUT {ROUTE}" or (s.attributes or {}).get("http.route") == ROUTE)
    ]


def test_one_trace_from_gateway_through_kafka_to_the_consumer(traced_write: TracedWrite) -> None:
    spans, consume = traced_write.spans, traced_write.consume
    servers = [s for s in spans if s.kind is SpanKind.SERVER and (s.attributes or {}).get("http.route") == ROUTE]
    gateway_server = [s for s in servers if _scope(s) == "gateway.http"]
    bookmarks_server = [s for s in servers if _scope(s) == "bookmarks.http"]
    proxy_client = [s for s in spans if s.kind is SpanKind.CLIENT and _scope(s) == "gateway.proxy"]
    assert len(gateway_server) == 1, f"gateway server span of the PUT:\n{_describe(spans)}"
    assert len(bookmarks_server) == 1, f"bookmarks server span of the PUT:\n{_describe(spans)}"
    assert len(proxy_client) == 1, f"gateway's upstream call span:\n{_describe(spans)}"
    gw, proxy, bm = gateway_server[0], proxy_client[0], bookmarks_server[0]

    trace_ids = {gw.context.trace_id, proxy.context.trace_id, bm.context.trace_id, consume.context.trace_id}
    assert len(trace_ids) == 1, f"the write is split over {len(trace_ids)} traces:\n{_describe(spans)}"
    assert gw.name == f"PUT {ROUTE}" and bm.name == f"PUT {ROUTE}"

    # Parent links: gateway server → proxy client → bookmarks server (remote) → … → consumer (remote).
    assert gw.parent is None or gw.parent.is_remote, "the gateway's span is where the trace starts here"
    assert proxy.parent is not None and proxy.parent.span_id == gw.context.span_id
    assert bm.parent is not None and bm.parent.span_id == proxy.context.span_id and bm.parent.is_remote
    assert consume.parent is not None and consume.parent.is_remote, (
        "the consumer span must continue the producer's trace"
    )
    by_id = {s.context.span_id: s for s in spans}
    chain: list[str] = []
    parent: SpanContext | None = consume.parent
    while parent is not None and parent.span_id != bm.context.span_id:
        ancestor = by_id.get(parent.span_id)
        assert ancestor is not None, (
            f"the consumer's parent chain {chain} leaves the bookmarks request's spans:\n{_describe(spans)}"
        )
        chain.append(ancestor.name)
        parent = ancestor.parent
    assert parent is not None, f"the consumer span does not descend from the bookmarks server span:\n{_describe(spans)}"


def test_the_write_makes_no_second_trace(traced_write: TracedWrite) -> None:
    # A tracing backend must show the request as one trace: a server span for it that roots a trace of
    # its own (a second instrumentation layer that does not share the context) splits the picture.
    spans = traced_write.spans
    servers = _put_server_spans(spans)
    trace_ids = {s.context.trace_id for s in servers} | {traced_write.consume.context.trace_id}
    assert len(trace_ids) == 1, (
        f"server spans of one PUT are spread over {len(trace_ids)} traces:\n{_describe(servers)}"
    )
