"""OpenTelemetry setup and W3C trace-context propagation over HTTP headers and Kafka headers.

Spans are recorded only when something receives them (an OTLP exporter, or a processor a test adds):
then a parent-based ratio sampler (``TRACES_SAMPLE_RATIO``) decides per trace, and a service follows
the decision of the trace it joins. Without a receiver nothing is recorded, yet every span still has
its trace id (taken from an incoming ``traceparent``, or new), so ids reach the logs and propagate
downstream at almost no cost. Setting tracing up also puts a span around every SQL statement of a
recorded operation (:mod:`common.sql_tracing`, which skips statements of unrecorded ones).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.propagate import extract, inject
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import (
    Decision,
    ParentBased,
    Sampler,
    SamplingResult,
    TraceIdRatioBased,
)
from opentelemetry.trace import Link, SpanKind
from opentelemetry.util.types import Attributes

from common import sql_tracing


class RecordWhenReceived(Sampler):
    """Drops every span until :meth:`receive` (a receiver was added); then ``ParentBased(ratio)``."""

    def __init__(self, ratio: float) -> None:
        self._sampler = ParentBased(TraceIdRatioBased(ratio))
        self.receiving = False

    def receive(self) -> None:
        self.receiving = True

    def should_sample(
        self,
        parent_context: otel_context.Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: trace.TraceState | None = None,
    ) -> SamplingResult:
        if not self.receiving:
            return SamplingResult(Decision.DROP)
        return self._sampler.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)

    def get_description(self) -> str:
        return f"RecordWhenReceived({self._sampler.get_description()})"  # type: ignore[no-untyped-call]


_configured: RecordWhenReceived | None = None


def setup_tracing(
    service: str,
    otlp_endpoint: str | None,
    *,
    sample_ratio: float = 1.0,
    extra_processors: Iterable[SpanProcessor] = (),
) -> TracerProvider:
    """Install a tracer provider once per process; export over OTLP/HTTP only when an endpoint is set.

    ``sample_ratio``: the share of traces recorded once something receives spans (a trace started
    elsewhere keeps its own decision). A later call only adds ``extra_processors``.
    """
    global _configured
    current = trace.get_tracer_provider()
    if _configured is not None and isinstance(current, TracerProvider):
        _add_processors(current, _configured, extra_processors)
        return current
    sampler = RecordWhenReceived(sample_ratio)
    provider = TracerProvider(resource=Resource.create({"service.name": service}), sampler=sampler)
    if otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=otlp_endpoint.rstrip("/") + "/v1/traces")
        _add_processors(provider, sampler, [BatchSpanProcessor(exporter)])
    _add_processors(provider, sampler, extra_processors)
    trace.set_tracer_provider(provider)
    sql_tracing.install()
    _configured = sampler
    return provider


def _add_processors(provider: TracerProvider, sampler: RecordWhenReceived, processors: Iterable[SpanProcessor]) -> None:
    for processor in processors:
        provider.add_span_processor(processor)
        sampler.receive()


def tracer(name: str) -> trace.Tracer:
    return trace.get_tracer(name)


def inject_http_headers(headers: MutableMapping[str, str]) -> MutableMapping[str, str]:
    """Add ``traceparent``/``tracestate`` of the current span to outgoing HTTP headers."""
    inject(headers)
    return headers


def current_trace_headers() -> dict[str, str]:
    carrier: dict[str, str] = {}
    inject(carrier)
    return carrier


def kafka_headers(carrier: Mapping[str, str]) -> list[tuple[str, bytes]]:
    return [(k, v.encode()) for k, v in carrier.items()]


def context_from_kafka_headers(headers: Iterable[tuple[str, bytes]] | None) -> otel_context.Context:
    carrier = {k: v.decode(errors="replace") for k, v in (headers or ())}
    return extract(carrier)


def context_from_http_headers(headers: Mapping[str, str]) -> otel_context.Context:
    return extract(dict(headers))
