"""Spans are recorded only when something receives them, then by a parent-based ratio; trace ids always."""

from __future__ import annotations

from opentelemetry.propagate import extract
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from common.tracing import RecordWhenReceived

SAMPLED_PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
UNSAMPLED_PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"


def provider(ratio: float) -> tuple[TracerProvider, RecordWhenReceived, InMemorySpanExporter]:
    sampler = RecordWhenReceived(ratio)
    return TracerProvider(sampler=sampler), sampler, InMemorySpanExporter()


def test_without_a_receiver_nothing_is_recorded_but_ids_exist_and_follow_the_parent() -> None:
    tracer_provider, _, _ = provider(1.0)
    tracer = tracer_provider.get_tracer("t")
    with tracer.start_as_current_span("root") as root:
        assert not root.is_recording()
        assert root.get_span_context().trace_id != 0
    joined = tracer.start_span("joined", context=extract({"traceparent": SAMPLED_PARENT}))
    assert not joined.is_recording()
    assert format(joined.get_span_context().trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"


def test_with_a_receiver_the_ratio_decides_roots_and_joined_traces_keep_their_decision() -> None:
    tracer_provider, sampler, exporter = provider(0.0)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    sampler.receive()
    tracer = tracer_provider.get_tracer("t")
    assert not tracer.start_span("new root").is_recording()  # ratio 0
    assert tracer.start_span("joined", context=extract({"traceparent": SAMPLED_PARENT})).is_recording()
    assert not tracer.start_span("joined", context=extract({"traceparent": UNSAMPLED_PARENT})).is_recording()

    everything, every_sampler, _ = provider(1.0)
    every_sampler.receive()
    with everything.get_tracer("t").start_as_current_span("root") as root:
        assert root.is_recording()
