"""implausible_count (a per-request ceiling, every input), the literal-only parser, cache hits."""

from __future__ import annotations

from typing import Any

import orjson

from exporter.engine.pipeline import Pipeline
from exporter.engine.records import Record, parse_object
from exporter.prices.table import load_price_table
from exporter.sources.formats.litellm import to_canonical
from exporter.sources.otlp.attributes import parse_literal
from exporter.sources.otlp.mapping import Mapped, map_span
from exporter.sources.otlp.spans import SpanView

PRICES = load_price_table()
TS = 1794744000.0  # 2026-11-15


def _span(attrs: dict[str, Any], scope: str = "x") -> SpanView:
    return SpanView(attrs, {}, scope, "ab" * 16, "cd" * 8, int(TS * 1e9) - 1, int(TS * 1e9))


def _months(p: Pipeline) -> dict[str, Any]:
    return next(iter(p.aggregates.month_totals().values()))


def test_two_to_the_53_input_tokens_is_rejected_not_priced() -> None:
    outcome = map_span(_span({"gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 2**53 - 1,
                              "gen_ai.usage.output_tokens": 1}))
    assert isinstance(outcome, Mapped)
    record = parse_object(outcome.record)
    assert isinstance(record, Record)
    p = Pipeline(PRICES, wall_clock=lambda: 4e9)
    p.apply(record)
    totals = _months(p)
    assert (totals["requests"], totals["spend_usd"], totals["rejected"]) == (0, 0.0, 1)
    assert p.aggregates.rejected == {("2026-11", "implausible_count"): 1}


def test_ceiling_holds_for_log_lines_and_is_configurable() -> None:
    line = orjson.dumps({"ts": TS, "request_id": "r1", "model": "gpt-4o",
                         "usage": {"prompt_tokens": 10_000_001, "completion_tokens": 5}})
    p = Pipeline(PRICES, wall_clock=lambda: 4e9)
    p.ingest_line(line)  # the fast path of canonical lines
    assert _months(p)["rejected"] == 1 and _months(p)["requests"] == 0
    roomy = Pipeline(PRICES, wall_clock=lambda: 4e9, max_request_tokens=20_000_000)
    roomy.ingest_line(line)
    assert _months(roomy)["requests"] == 1
    exact = orjson.dumps({"ts": TS, "request_id": "r2", "model": "gpt-4o",
                          "tokens_before": 10_000_000, "tokens_after": 1})
    p.ingest_line(exact)
    assert _months(p)["requests"] == 1  # the ceiling itself is plausible
    saving = orjson.dumps({"ts": TS, "request_id": "r3", "model": "gpt-4o",
                           "tokens_before": 10_000_001, "tokens_after": 1})
    p.ingest_line(saving)
    assert _months(p)["rejected"] == 2


def test_literal_parser_accepts_only_literals() -> None:
    assert parse_literal("{'a': 1, 'b': [None, -2, 'x'], 'c': {'d': 1.5}}", 1000) == {
        "a": 1, "b": [None, -2, "x"], "c": {"d": 1.5}}
    for text in ("Usage(prompt_tokens=1)", "__import__('os').system('true')", "{'a': 1 + 2}",
                 "{'a': x}", "{'a': 1", "[" * 50 + "]" * 50, "lambda: 1", "{1, 2}"):
        assert parse_literal(text, 1000) is None, text
    assert parse_literal("{'a': 1}", 5) is None  # over the size cap


def _litellm_span(usage_object: str, **extra: Any) -> dict[str, Any]:
    return {"gen_ai.request.model": "claude-sonnet-4-5", "gen_ai.system": "anthropic",
            "gen_ai.response.id": "chatcmpl-x", "litellm.call_id": "call-1",
            "litellm.cache_hit": False, "gen_ai.usage.input_tokens": 3150,
            "gen_ai.usage.output_tokens": 80, "gen_ai.usage.total_tokens": 3230,
            "metadata.usage_object": usage_object, **extra}


def test_litellm_unparseable_usage_object_falls_back_flagged() -> None:
    outcome = map_span(_span(_litellm_span("Usage(completion_tokens=80, prompt_tokens=3150)")))
    assert isinstance(outcome, Mapped)
    assert outcome.record["source_flags"] == ["usage_object_unparsed"]
    assert outcome.record["usage"] == {"prompt_tokens": 3150, "completion_tokens": 80}
    assert outcome.record["request_id"] == "chatcmpl-x"


def test_litellm_otel_cache_hit_keeps_the_cached_usage_with_its_call_id() -> None:
    attrs = _litellm_span("{'prompt_tokens': 3150, 'completion_tokens': 80}",
                          **{"litellm.cache_hit": True})
    outcome = map_span(_span(attrs))
    assert isinstance(outcome, Mapped)
    assert outcome.record["response_cache"] == "unspecified"
    record = parse_object(outcome.record)
    assert isinstance(record, Record) and record.usage is not None
    assert record.request_id == "call-1"
    assert (record.usage.prompt_tokens, record.usage.output) == (3150, 80)  # what the paying call billed
    assert "response_cache_hit" in record.flags


def test_litellm_payload_cache_hit_keeps_the_cached_usage() -> None:
    payload = {"id": "abc_cache_hit1", "startTime": TS, "model": "gpt-4o", "cache_hit": True,
               "custom_llm_provider": "openai", "call_type": "completion",
               "metadata": {"usage_object": {"prompt_tokens": 100, "completion_tokens": 5}}}
    canonical = to_canonical(payload)
    assert canonical["response_cache"] == "unspecified"
    record = parse_object(canonical)
    assert isinstance(record, Record) and record.usage is not None
    assert (record.usage.prompt_tokens, record.usage.output) == (100, 5)
    assert "response_cache_hit" in record.flags
