"""The optimizer's own spend on a span (``llm_savings.optimizer.*``) -> the record's ``optimizer`` block."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from exporter.engine.records import Record, Rejection, parse_object
from exporter.engine.usage import OptimizerCall, Usage
from exporter.sources.otlp.mapping import Mapped, map_protobuf, map_span
from tests.sources.otlp.test_otlp_mapping import view

SAVINGS = {"gen_ai.request.model": "gpt-4o", "llm_savings.tokens_before": 9000, "llm_savings.tokens_after": 3000,
           "llm_savings.count_method": "tiktoken:o200k_base"}
OPTIMIZER = {"llm_savings.optimizer.model": "gpt-4o-mini", "llm_savings.optimizer.provider": "openai",
             "llm_savings.optimizer.input_tokens": 1200, "llm_savings.optimizer.cache_read_tokens": 200,
             "llm_savings.optimizer.output_tokens": 80}


def test_optimizer_attributes_become_the_optimizer_block() -> None:
    outcome = map_span(view({**SAVINGS, **OPTIMIZER}))
    assert isinstance(outcome, Mapped)
    record = parse_object(outcome.record)
    assert isinstance(record, Record)
    # input includes the cache reads: 1000 fresh + 200 read
    assert record.optimizer == OptimizerCall("gpt-4o-mini", "openai", Usage(1000, 200, 0, 0, 80, "openai_chat"))


def test_optimizer_counts_without_a_model_reject_the_span_record() -> None:
    attrs = {**SAVINGS, **OPTIMIZER}
    del attrs["llm_savings.optimizer.model"]
    outcome = map_span(view(attrs))
    assert isinstance(outcome, Mapped)
    result = parse_object(outcome.record)
    assert isinstance(result, Rejection) and result.reason == "invalid_field"


def test_a_span_without_optimizer_attributes_has_no_block() -> None:
    outcome = map_span(view(SAVINGS))
    assert isinstance(outcome, Mapped) and "optimizer" not in outcome.record


def test_through_the_real_sdk_and_protobuf() -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "compressor"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    span = provider.get_tracer("llm_savings").start_span("chat gpt-4o", attributes={**SAVINGS, **OPTIMIZER})
    span.end()
    body = encode_spans(memory.get_finished_spans()).SerializeToString()
    provider.shutdown()
    result, count = map_protobuf(body)
    assert count == 1 and len(result.records) == 1
    record = parse_object(result.records[0])
    assert isinstance(record, Record) and record.optimizer is not None
    assert record.optimizer.usage == Usage(1000, 200, 0, 0, 80, "openai_chat")


def test_the_optimizer_s_service_tier_rides_along() -> None:
    outcome = map_span(view({**SAVINGS, **OPTIMIZER, "llm_savings.optimizer.service_tier": "Flex"}))
    assert isinstance(outcome, Mapped)
    record = parse_object(outcome.record)
    assert isinstance(record, Record) and record.optimizer is not None
    assert record.optimizer.service_tier == "flex"
    assert record.service_tier is None  # the request's own tier is apart
