"""The gateway keys (service_tier, response_cache, requested_model) from spans and LiteLLM payloads.

On the committed real captures (tests/fixtures/dialects): the record a span or payload line gives
carries the tier the instrumentation recorded, and for LiteLLM the Router's model group and its
response-cache hits; plus the ``llm_savings.*`` attributes and the malformed-value rule.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.engine.records import Record, parse_object
from exporter.sources.formats.litellm import to_canonical
from exporter.sources.otlp.attributes import BadValue
from exporter.sources.otlp.gateway import RESPONSE_CACHE_KINDS, SERVICE_TIER_KEYS, gateway_keys
from exporter.sources.otlp.mapping import Mapped, MappingOptions, Rejected, map_protobuf, map_span
from exporter.sources.otlp.spans import SpanView
from tests.live.pytest_fixtures import all_cases
from tests.live.spans import FIXTURES, load_case, request_bytes

OTLP_CASES = [(d, c) for d, c in all_cases() if d != "litellm_payload"]


def _records(dialect: str, case: str) -> list[dict[str, Any]]:
    doc = json.loads((FIXTURES / dialect / f"{case}.json").read_text())
    options = MappingOptions()
    out: list[dict[str, Any]] = []
    for request in doc["requests"]:
        result, _ = map_protobuf(request_bytes(request), options)
        assert not result.rejected, result.rejected
        out += result.records
    return out


def _recorded_tiers(dialect: str, case: str) -> set[str]:
    """The service tiers the instrumentation put on the case's spans, by the first name read."""
    tiers = set()
    for span in load_case(dialect, case).spans:
        for key in SERVICE_TIER_KEYS:
            if span.attributes.get(key):
                tiers.add(span.attributes[key])
                break
    return tiers


def test_real_captures_carry_service_tiers() -> None:
    """The parametrised test below is not vacuous: the captures do record tiers."""
    def union(dialect: str) -> set[str]:
        return set().union(*(_recorded_tiers(d, c) for d, c in OTLP_CASES if d == dialect))

    assert "default" in union("otel_openai_v2")
    assert {"default", "standard"} <= union("litellm_otel")
    assert "standard" in union("anthropic_native")


@pytest.mark.parametrize(("dialect", "case"), OTLP_CASES, ids=[f"{d}/{c}" for d, c in OTLP_CASES])
def test_every_captured_model_record_has_the_tier_its_spans_recorded(dialect: str, case: str) -> None:
    tiers = _recorded_tiers(dialect, case)
    records = _records(dialect, case)
    got = {r["service_tier"] for r in records if "service_tier" in r}
    if tiers:
        assert got and got <= tiers, (got, tiers)
    else:
        assert not got
    for record in records:
        parsed = parse_object(record)
        assert isinstance(parsed, Record), parsed


def test_litellm_span_tier_is_the_providers_spelling() -> None:
    assert {r.get("service_tier") for r in _records("litellm_otel", "anthropic_plain")} == {"standard"}
    assert {r.get("service_tier") for r in _records("litellm_otel", "openai_chat_plain")} == {"default"}
    assert {r.get("service_tier") for r in _records("otel_openai_v2", "chat_plain")} == {"default"}


def _payload_lines(case: str) -> list[dict[str, Any]]:
    text = (FIXTURES / "litellm_payload" / f"{case}.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def test_litellm_payload_tier_from_the_response() -> None:
    (openai,) = _payload_lines("openai_chat_plain")
    assert to_canonical(openai)["service_tier"] == openai["response"]["service_tier"] == "default"
    (anthropic,) = _payload_lines("anthropic_plain")
    assert to_canonical(anthropic)["service_tier"] == "standard"
    assert "requested_model" not in to_canonical(openai)  # no Router: model_group is ""
    assert "response_cache" not in to_canonical(openai)


# --- llm_savings.* and the malformed-value rule ---------------------------------------------------


def _span(attrs: dict[str, Any]) -> SpanView:
    return SpanView(attrs=attrs, resource={}, scope_name="test", trace_id="ab" * 16, span_id="cd" * 8,
                    start_ns=1_796_100_000 * 10**9, end_ns=1_796_100_001 * 10**9)


def test_llm_savings_attributes_win() -> None:
    attrs = {"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 10,
             "gen_ai.usage.output_tokens": 2, "openai.response.service_tier": "default",
             "llm_savings.service_tier": "flex", "llm_savings.response_cache": "semantic",
             "llm_savings.requested_model": "smart"}
    outcome = map_span(_span(attrs))
    assert isinstance(outcome, Mapped)
    assert {k: outcome.record[k] for k in ("model", "service_tier", "response_cache", "requested_model")} == {
        "model": "gpt-4o-mini", "service_tier": "flex", "response_cache": "semantic", "requested_model": "smart"}


@pytest.mark.parametrize("key", SERVICE_TIER_KEYS)
def test_each_tier_name_is_read(key: str) -> None:
    assert gateway_keys({key: "priority"}) == {"service_tier": "priority"}


@pytest.mark.parametrize("attrs", [
    {"llm_savings.response_cache": "hit"},
    {"llm_savings.response_cache": True},
    {"openai.response.service_tier": 3},
    {"llm_savings.requested_model": "x" * 10_000},
])
def test_malformed_gateway_attribute_rejects_the_span(attrs: dict[str, Any]) -> None:
    outcome = map_span(_span({"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 1, **attrs}))
    assert isinstance(outcome, Rejected) and outcome.reason == "invalid_field"
    assert next(iter(attrs)) in outcome.detail


_VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=80),
                    st.sampled_from([*RESPONSE_CACHE_KINDS, "true", "True", "flex"]))


@given(st.dictionaries(st.sampled_from([*SERVICE_TIER_KEYS, "litellm.cache_hit", "llm_savings.response_cache",
                                        "llm_savings.requested_model"]), _VALUES))
def test_gateway_keys_either_reads_or_names_the_bad_attribute(attrs: dict[str, Any]) -> None:
    try:
        out = gateway_keys(attrs)
    except BadValue as bad:
        assert bad.reason == "invalid_field" and any(key in bad.detail for key in attrs)
        return
    assert set(out) <= {"service_tier", "response_cache", "requested_model"}
    assert out.get("response_cache", "exact") in RESPONSE_CACHE_KINDS
    for value in out.values():
        assert isinstance(value, str) and value


# --- the captured LiteLLM response-cache hit and Router alias -------------------------------------


def _calls(case: str) -> list[dict[str, Any]]:
    return json.loads((FIXTURES / "litellm_payload" / f"{case}.calls.json").read_text())["calls"]


def _tiers(record: dict[str, Any]) -> tuple[int, int, int, int, int]:
    parsed = parse_object(record)
    assert isinstance(parsed, Record) and parsed.usage is not None, parsed
    u = parsed.usage
    return (u.fresh_input, u.cache_read, u.cache_write_5m, u.cache_write_1h, u.output)


def _truth(call: dict[str, Any]) -> tuple[int, int, int, int, int]:
    u = call["usage"]
    return (u["fresh_input"], u["cache_read"], u["cache_write_5m"], u["cache_write_1h"], u["output"])


def test_litellm_payload_cache_hit_is_exact_with_the_paying_calls_usage() -> None:
    (call,) = _calls("openai_chat_response_cache_hit")  # one provider call for two completions
    paid, hit = (to_canonical(line) for line in _payload_lines("openai_chat_response_cache_hit"))
    assert "response_cache" not in paid and "response_cache_hit" not in paid.get("source_flags", [])
    assert hit["response_cache"] == "exact"  # Cache(type="local"): a key cache
    assert hit["source_flags"] == ["response_cache_hit"]
    assert _tiers(hit) == _tiers(paid) == _truth(call)  # what the original call billed, not zero
    assert hit["request_id"] != paid["request_id"]
    assert hit["service_tier"] == paid["service_tier"] == "default"


def test_litellm_payload_router_alias_is_the_requested_model() -> None:
    from tests.live.cases import OPENAI_CHAT_MODEL, ROUTER_GROUP

    (call,) = _calls("router_alias")
    (line,) = _payload_lines("router_alias")
    record = to_canonical(line)
    assert record["requested_model"] == ROUTER_GROUP == line["model_group"]
    assert record["model"].endswith(OPENAI_CHAT_MODEL) and call["model"] == OPENAI_CHAT_MODEL
    assert _tiers(record) == _truth(call)
    assert "response_cache" not in record


@pytest.mark.parametrize("dialect", ["litellm_otel", "litellm_otel_latest"])
def test_litellm_span_cache_hit_keeps_the_paying_calls_usage(dialect: str) -> None:
    doc = json.loads((FIXTURES / dialect / "openai_chat_response_cache_hit.json").read_text())
    (call,) = doc["calls"]
    records = _records(dialect, "openai_chat_response_cache_hit")
    hits = [r for r in records if "response_cache" in r]
    paid = [r for r in records if "response_cache" not in r]
    assert len(hits) == len(paid) == 1
    assert hits[0]["response_cache"] == "unspecified"  # the span does not name the cache
    assert "response_cache_hit" in hits[0]["source_flags"]
    assert _tiers(hits[0]) == _tiers(paid[0]) == _truth(call)
    assert hits[0]["request_id"] != paid[0]["request_id"]  # the call id, not the cached response's id


@pytest.mark.parametrize("dialect", ["litellm_otel", "litellm_otel_latest"])
def test_litellm_span_router_alias_is_the_requested_model(dialect: str) -> None:
    from tests.live.cases import OPENAI_CHAT_MODEL, ROUTER_GROUP

    (record,) = _records(dialect, "router_alias")
    assert (record["requested_model"], record["model"]) == (ROUTER_GROUP, OPENAI_CHAT_MODEL)
    assert record["service_tier"] == "default"


@pytest.mark.parametrize("dialect", ["otel_openai_v2", "otel_openai_v2_latest"])
def test_openai_flex_call_is_the_flex_tier(dialect: str) -> None:
    """The real openai client asked for flex; the instrumentation recorded the response's tier
    (``openai.response.service_tier``, semantic-conventions 0.66b2), not the request's."""
    (span,) = [s for s in load_case(dialect, "chat_plain_flex").spans if s.attributes.get("gen_ai.request.model")]
    assert span.attributes["openai.response.service_tier"] == "flex"
    (record,) = _records(dialect, "chat_plain_flex")
    assert record["service_tier"] == "flex"
    assert {r.get("service_tier") for r in _records(dialect, "chat_plain")} == {"default"}
