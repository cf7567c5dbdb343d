"""OpenTelemetry setup and W3C trace-context propagation over HTTP headers and Kafka headers.

Every SQL statement is a CLIENT span (asyncpg's instrumentation: SQLAlchemy's asyncpg dialect and the
raw driver transactions both end in asyncpg), but only inside a traced operation: a statement with no
parent span (the relay's and the worker's background polling) is not sampled, so idle processes record
nothing and every recorded statement belongs to a request, an event or an enrichment attempt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.propagate import extract, inject
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, Decision, ParentBased, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind
from opentelemetry.trace.span import TraceState
from opentelemetry.util.types import Attributes

_DB_SYSTEM_ATTRIBUTES = ("db.system", "db.system.name")


class NoOrphanStatements(Sampler):
    """The SDK's default (parent-based, always on), except that a database span without a parent is dropped."""

    def __init__(self) -> None:
        self._default = ParentBased(ALWAYS_ON)

    def should_sample(
        self,
        parent_context: otel_context.Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        if kind is SpanKind.CLIENT and attributes and any(key in attributes for key in _DB_SYSTEM_ATTRIBUTES):
            if not trace.get_current_span(parent_context).get_span_context().is_valid:
                return SamplingResult(Decision.DROP)
        return self._default.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)

    def get_description(self) -> str:
        return "NoOrphanStatements{ParentBased{ALWAYS_ON}}"


def instrument_database_driver() -> None:
    """SQL statements as spans (asyncpg), once per process."""
    from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor

    instrumentor = AsyncPGInstrumentor()  # type: ignore[no-untyped-call]
    if not instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.instrument()


_configured = False


def setup_tracing(
    service: str, otlp_endpoint: str | None, *, extra_processors: Iterable[SpanProcessor] = ()
) -> TracerProvider:
    """Install a tracer provider once per process; export over OTLP/HTTP only when an endpoint is set.

    Without an endpoint spans are still created so trace ids reach the logs and propagate downstream.
    """
    global _configured
    current = trace.get_tracer_provider()
    if _configured and isinstance(current, TracerProvider):
        for processor in extra_processors:
            current.add_span_processor(processor)
        return current
    provider = TracerProvider(resource=Resource.create({"service.name": service}), sampler=NoOrphanStatements())
    if otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_endpoint.rstrip("/") + "/v1/traces"))
        )
    for processor in extra_processors:
        provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    instrument_database_driver()
    _configured = True
    return provider


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
