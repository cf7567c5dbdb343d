"""OpenTelemetry setup and W3C trace-context propagation over HTTP headers and Kafka headers.

Setting tracing up also puts a span around every SQL statement run inside a traced operation
(:mod:`common.sql_tracing`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.propagate import extract, inject
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from common import sql_tracing

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
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    if otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_endpoint.rstrip("/") + "/v1/traces"))
        )
    for processor in extra_processors:
        provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    sql_tracing.install()
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
