"""Span -> canonical record mapping: dialects, cache conventions, ids, malformed values, fuzzing."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from exporter.engine.records import Record, Rejection, parse_object
from exporter.sources.otlp.dialects import DIALECT_NAMES as DIALECTS
from exporter.sources.otlp.mapping import (
    Ignored,
    Mapped,
    MappingOptions,
    Rejected,
    SpanView,
    UndecodableRequest,
    map_json,
    map_json_object,
    map_protobuf,
    map_span,
)
from tests.fixtures.otlp.spans import (
    END_NS,
    IGNORED,
    MODEL_CALLS,
    PROMPT_TEXT,
    expected,
    make_spans,
    otlp_json_body,
    span_key,
)

FUZZ = settings(deadline=1000, max_examples=200, suppress_health_check=[HealthCheck.too_slow])


def view(
    attrs: dict[str, Any], resource: dict[str, Any] | None = None, scope: str = "x"
) -> SpanView:
    return SpanView(
        attrs,
        resource or {},
        scope,
        "0af7651916cd43dd8448eb211c80319c",
        "b7ad6b7169203331",
        1,
        END_NS,
    )


def mapped(attrs: dict[str, Any], **kw: Any) -> dict[str, Any]:
    outcome = map_span(view(attrs), MappingOptions(**kw))
    assert isinstance(outcome, Mapped), outcome
    return outcome.record


@pytest.fixture(scope="module")
def sdk_spans() -> dict[str, Any]:
    return make_spans()


# --- real SDK spans through both wire encodings -----------------------------------------


def test_every_instrumentation_span_maps_to_its_record_via_protobuf(
    sdk_spans: dict[str, Any],
) -> None:
    body = encode_spans(list(sdk_spans.values())).SerializeToString()
    result, total = map_protobuf(body)
    assert total == len(sdk_spans)
    by_id = {r["request_id"]: r for r in result.records}
    for name in MODEL_CALLS:
        want = expected(name, sdk_spans[name])
        assert by_id[want["request_id"]] == want, name
    assert len(result.records) == len(MODEL_CALLS)
    assert dict(result.ignored) == {"agent_rollup": 3, "not_model_call": 1}
    assert not result.rejected


def test_otlp_json_gives_the_same_records_as_protobuf(sdk_spans: dict[str, Any]) -> None:
    spans = list(sdk_spans.values())
    doc = otlp_json_body(spans)
    first = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(first["traceId"]) == 32 and isinstance(
        first["endTimeUnixNano"], str
    )  # OTLP/JSON form
    from_json, _ = map_json(orjson.dumps(doc))
    from_pb, _ = map_protobuf(encode_spans(spans).SerializeToString())
    assert from_json.records == from_pb.records
    assert from_json.ignored == from_pb.ignored


def test_prompt_text_never_reaches_a_record(sdk_spans: dict[str, Any]) -> None:
    result, _ = map_protobuf(encode_spans(list(sdk_spans.values())).SerializeToString())
    assert PROMPT_TEXT not in orjson.dumps(result.records).decode()
    assert "SECRET" not in repr(result)


def test_each_record_parses_with_the_cache_counted_once(sdk_spans: dict[str, Any]) -> None:
    """The tiers the record parser derives: fresh = input - cache_read - cache_write."""
    tiers = {}
    for name in MODEL_CALLS:
        rec = parse_object(expected(name, sdk_spans[name]))
        assert isinstance(rec, Record), (name, rec)
        assert rec.usage is not None
        tiers[name] = (
            rec.usage.fresh_input,
            rec.usage.cache_read,
            rec.usage.cache_write_5m,
            rec.usage.output,
        )
    assert tiers["openai_cached"] == (464, 1536, 0, 150)
    assert tiers["anthropic_openllmetry"] == (100, 3000, 1200, 250)
    assert tiers["bedrock"] == (100, 500, 300, 60)
    assert tiers["gemini"] == (176, 1024, 0, 300)
    assert tiers["pydantic_ai_chat"] == (288, 512, 0, 40)
    assert tiers["openinference_anthropic"] == (200, 0, 1733, 90)
    assert tiers["strands_native_input"] == (4299, 35574, 17787, 631)
    assert tiers["gateway_savings"] == (6000, 0, 0, 400)


def test_request_id_is_stable_across_resends_and_encodings(sdk_spans: dict[str, Any]) -> None:
    span = sdk_spans["bedrock"]
    ids = set()
    for _ in range(2):
        pb, _ = map_protobuf(encode_spans([span]).SerializeToString())
        js, _ = map_json(orjson.dumps(otlp_json_body([span])))
        ids |= {pb.records[0]["request_id"], js.records[0]["request_id"]}
    assert ids == {span_key(span)}


def test_ignored_spans_are_named(sdk_spans: dict[str, Any]) -> None:
    for name, reason in IGNORED.items():
        pb, _ = map_protobuf(encode_spans([sdk_spans[name]]).SerializeToString())
        assert dict(pb.ignored) == {reason: 1}, name
        assert not pb.records


# --- dialect rules ------------------------------------------------------------------------------


def test_response_model_is_preferred_and_request_model_is_the_fallback() -> None:
    assert mapped({"gen_ai.request.model": "a", "gen_ai.response.model": "b"})["model"] == "b"
    assert mapped({"gen_ai.request.model": "a"})["model"] == "a"
    assert mapped({"llm.model_name": "c", "llm.token_count.prompt": 1})["model"] == "c"


def test_provider_names_fold_to_price_table_families() -> None:
    def provider(attrs: dict[str, Any]) -> str:
        return str(mapped({"gen_ai.request.model": "m", **attrs})["provider"])

    assert provider({"gen_ai.provider.name": "aws.bedrock"}) == "bedrock"
    assert provider({"gen_ai.provider.name": "gcp.vertex_ai"}) == "google"
    assert provider({"gen_ai.system": "Anthropic"}) == "anthropic"
    assert (
        provider({"gen_ai.provider.name": "openai", "gen_ai.system": "azure.ai.openai"}) == "openai"
    )
    assert provider({"llm.provider": "aws", "llm.system": "anthropic"}) == "bedrock"
    assert provider({"llm.system": "vertexai"}) == "google"


def test_request_id_priority() -> None:
    attrs = {"gen_ai.request.model": "m", "gen_ai.response.id": "resp-1"}
    assert mapped(attrs)["request_id"] == "resp-1"
    assert mapped({**attrs, "llm_savings.request_id": "gw-9"})["request_id"] == "gw-9"
    assert (
        mapped({"gen_ai.request.model": "m"})["request_id"]
        == "0af7651916cd43dd8448eb211c80319c:b7ad6b7169203331"
    )
    no_ids = SpanView({"gen_ai.request.model": "m"}, {}, "", "", "", 0, END_NS)
    outcome = map_span(no_ids)
    assert isinstance(outcome, Mapped) and "request_id" not in outcome.record


def test_tenant_from_span_then_resource_with_configurable_keys() -> None:
    base = {"gen_ai.request.model": "m"}
    assert (
        map_span(view({**base, "tenant.id": "s"}, {"llm_savings.tenant": "r"})).record["tenant"]
        == "s"
    )  # type: ignore[union-attr]
    assert map_span(view(base, {"tenant.id": "r"})).record["tenant"] == "r"  # type: ignore[union-attr]
    custom = MappingOptions(tenant_attributes=("k8s.namespace.name",))
    outcome = map_span(view(base, {"k8s.namespace.name": "ns1", "llm_savings.tenant": "x"}), custom)
    assert isinstance(outcome, Mapped) and outcome.record["tenant"] == "ns1"


@pytest.mark.parametrize(
    ("attrs", "dialect"),
    [
        ({"gen_ai.usage.input_tokens": 1}, "gen_ai"),
        ({"gen_ai.usage.prompt_tokens": 1}, "gen_ai_legacy"),
        ({"gen_ai.usage.input_tokens": 1, "gen_ai.usage.cache_write_tokens": 0}, "pydantic_ai"),
        ({"llm.token_count.completion": 1}, "openinference"),
        ({"llm_savings.tokens_before": 5, "llm_savings.tokens_after": 4}, "llm_savings"),
    ],
)
def test_dialect_detection(attrs: dict[str, Any], dialect: str) -> None:
    record = mapped({"gen_ai.request.model": "m", **attrs})
    assert record["source_dialect"] == dialect
    assert record["source_dialect"] in DIALECTS


def test_pydantic_ai_scope_reads_usage_details() -> None:
    attrs = {
        "gen_ai.request.model": "claude-sonnet-4-5",
        "gen_ai.usage.input_tokens": 1000,  # includes cache, as pydantic-ai sums it
        "gen_ai.usage.details.cache_read_input_tokens": 600,
        "gen_ai.usage.details.cache_creation_input_tokens": 100,
    }
    outcome = map_span(view(attrs, scope="pydantic-ai"))
    assert isinstance(outcome, Mapped)
    assert outcome.record["source_dialect"] == "pydantic_ai"
    assert outcome.record["usage"] == {
        "prompt_tokens": 1000,
        "prompt_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 100},
    }


def test_total_decides_whether_input_includes_the_cache() -> None:
    base = {"gen_ai.request.model": "m", "gen_ai.usage.cache_read.input_tokens": 30}
    included = mapped(
        {
            **base,
            "gen_ai.usage.input_tokens": 100,
            "gen_ai.usage.output_tokens": 5,
            "gen_ai.usage.total_tokens": 105,
        }
    )
    assert included["usage"]["prompt_tokens"] == 100
    excluded = mapped(
        {
            **base,
            "gen_ai.usage.input_tokens": 70,
            "gen_ai.usage.output_tokens": 5,
            "gen_ai.usage.total_tokens": 105,
        }
    )
    assert excluded["usage"]["prompt_tokens"] == 100
    no_evidence = mapped({**base, "gen_ai.usage.input_tokens": 70, "gen_ai.usage.output_tokens": 5})
    assert no_evidence["usage"]["prompt_tokens"] == 70
    forced = mapped({**base, "gen_ai.usage.input_tokens": 70}, input_includes_cache=False)
    assert forced["usage"]["prompt_tokens"] == 100


def test_cache_above_input_is_left_to_the_parser_to_reject() -> None:
    record = mapped(
        {
            "gen_ai.request.model": "m",
            "gen_ai.usage.input_tokens": 10,
            "gen_ai.usage.cache_read.input_tokens": 50,
        }
    )
    parsed = parse_object(record)
    assert isinstance(parsed, Rejection) and parsed.reason == "inconsistent_usage"


def test_ts_is_end_time_in_seconds_or_start_time_or_absent() -> None:
    assert mapped({"gen_ai.request.model": "m"})["ts"] == END_NS / 1e9
    start_only = map_span(
        SpanView({"gen_ai.request.model": "m"}, {}, "", "a" * 32, "b" * 16, 5_000_000_000, 0)
    )
    assert isinstance(start_only, Mapped) and start_only.record["ts"] == 5.0
    neither = map_span(SpanView({"gen_ai.request.model": "m"}, {}, "", "a" * 32, "b" * 16, 0, 0))
    assert isinstance(neither, Mapped) and "ts" not in neither.record
    assert isinstance(parse_object(neither.record), Rejection)


def test_model_without_tokens_is_a_model_call_and_tokens_without_model_go_to_the_parser() -> None:
    assert "usage" not in mapped({"gen_ai.request.model": "m"})
    no_model = mapped({"gen_ai.usage.input_tokens": 3})
    assert "model" not in no_model
    parsed = parse_object(no_model)
    assert isinstance(parsed, Rejection) and parsed.reason == "missing_model"


# --- malformed values -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("gen_ai.usage.input_tokens", -1, "invalid_count"),
        ("gen_ai.usage.input_tokens", "12a", "invalid_count"),
        ("gen_ai.usage.output_tokens", 3.0, "invalid_count"),
        ("gen_ai.usage.output_tokens", True, "invalid_count"),
        ("gen_ai.usage.cache_read.input_tokens", 2**60, "invalid_count"),
        ("llm.token_count.prompt", "-5", "invalid_count"),
        ("llm_savings.tokens_before", 1.5, "invalid_count"),
        ("gen_ai.request.model", 42, "invalid_field"),
        ("gen_ai.response.model", "m" * 300, "invalid_field"),
        ("llm_savings.count_method", False, "invalid_field"),
    ],
)
def test_malformed_values_reject_the_span_with_a_bounded_reason(
    key: str, value: Any, reason: str
) -> None:
    outcome = map_span(view({"gen_ai.request.model": "m", key: value}))
    assert isinstance(outcome, Rejected) and outcome.reason == reason
    assert str(value) not in outcome.detail or len(str(value)) < 3


def test_string_digits_are_counts() -> None:
    assert mapped({"gen_ai.request.model": "m", "gen_ai.usage.input_tokens": "120"})["usage"] == {
        "prompt_tokens": 120
    }


def test_json_decoder_accepts_snake_case_and_base64_ids_and_rejects_bad_spans() -> None:
    good = {
        "trace_id": base64.b64encode(bytes(range(16))).decode(),
        "span_id": "00112233445566AA",
        "end_time_unix_nano": 2_000_000_000,
        "attributes": [
            {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "7"}},
        ],
    }
    bad_attrs = {"traceId": "ab", "spanId": "cd", "attributes": "nope"}
    doc = {"resource_spans": [{"scope_spans": [{"spans": [good, bad_attrs, 17]}]}]}
    result, total = map_json_object(doc)
    assert total == 3
    assert result.records == [
        {
            "ts": 2.0,
            "request_id": f"{bytes(range(16)).hex()}:00112233445566aa",
            "model": "m",
            "usage": {"prompt_tokens": 7},
            "source_dialect": "gen_ai",
        }
    ]
    assert dict(result.rejected) == {"invalid_otlp": 2}
    assert result.rejection_message() == "2 spans rejected (invalid_otlp=2)"


@pytest.mark.parametrize(
    "body", [b"", b"[]", b"nope", b'{"resourceSpans": 3}', b'{"resourceSpans": [1]}']
)
def test_json_envelope_errors_are_undecodable(body: bytes) -> None:
    if body == b"":
        with pytest.raises(UndecodableRequest):
            map_json(body)
        return
    with pytest.raises(UndecodableRequest):
        map_json(body)


def test_protobuf_garbage_is_undecodable() -> None:
    with pytest.raises(UndecodableRequest):
        map_protobuf(b"\xff\xff\xff\xff")
    result, total = map_protobuf(b"")  # an empty request is valid protobuf with no spans
    assert total == 0 and not result.records


# --- fuzzing --------------------------------------------------------------------------------------

KEYS = [
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.prompt_tokens",
    "gen_ai.usage.completion_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.cache_read_tokens",
    "gen_ai.usage.total_tokens",
    "llm.token_count.prompt",
    "llm.token_count.completion",
    "llm.token_count.prompt_details.cache_read",
    "llm.model_name",
    "llm.provider",
    "gen_ai.provider.name",
    "gen_ai.system",
    "gen_ai.response.id",
    "gen_ai.operation.name",
    "openinference.span.kind",
    "llm_savings.tokens_before",
    "llm_savings.tokens_after",
    "llm_savings.would_have_saved",
    "llm_savings.count_method",
    "llm_savings.tenant",
    "agent_name",
]
VALUES = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.text(max_size=20),
    st.floats(allow_nan=True),
    st.booleans(),
    st.sampled_from(["123", "0", "LLM", "CHAIN", "invoke_agent"]),
)


@FUZZ
@given(
    attrs=st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=10),
    includes=st.sampled_from([None, True, False]),
    end=st.integers(min_value=0, max_value=2**64 - 1),
)
def test_fuzz_map_span_never_raises_and_records_parse(
    attrs: dict[str, Any], includes: bool | None, end: int
) -> None:
    outcome = map_span(
        SpanView(attrs, {}, "s", "ab" * 16, "cd" * 8, 0, end),
        MappingOptions(input_includes_cache=includes),
    )
    if isinstance(outcome, Mapped):
        assert outcome.record["source_dialect"] in DIALECTS
        parsed = parse_object(outcome.record)
        assert isinstance(parsed, Record | Rejection)
        if (
            isinstance(parsed, Record)
            and parsed.usage is not None
            and "prompt_tokens" in outcome.record["usage"]
        ):
            assert parsed.usage.prompt_tokens == outcome.record["usage"]["prompt_tokens"]
    else:
        assert isinstance(outcome, Ignored | Rejected)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(["ab" * 16, "cd" * 8, "gen_ai.usage.input_tokens", "gen_ai.request.model"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "resourceSpans",
                    "scopeSpans",
                    "spans",
                    "attributes",
                    "key",
                    "value",
                    "intValue",
                    "stringValue",
                    "traceId",
                    "spanId",
                    "endTimeUnixNano",
                    "resource",
                    "scope",
                    "name",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@FUZZ
@given(doc=JSON)
def test_fuzz_json_decoder(doc: Any) -> None:
    try:
        result, total = map_json(orjson.dumps(doc))
    except UndecodableRequest:
        return
    assert len(result.records) + result.rejected_count + sum(result.ignored.values()) == total


@FUZZ
@given(body=st.binary(max_size=300))
def test_fuzz_protobuf_decoder(body: bytes) -> None:
    try:
        result, total = map_protobuf(body)
    except UndecodableRequest:
        return
    assert len(result.records) + result.rejected_count + sum(result.ignored.values()) == total


@FUZZ
@given(
    attrs=st.dictionaries(
        st.sampled_from(KEYS), VALUES.filter(lambda v: not isinstance(v, float)), max_size=8
    )
)
def test_fuzz_protobuf_roundtrip_matches_direct_mapping(attrs: dict[str, Any]) -> None:
    """A request built from attributes maps the same as the attributes mapped directly."""
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id = bytes.fromhex("ab" * 16)
    span.span_id = bytes.fromhex("cd" * 8)
    span.end_time_unix_nano = END_NS
    clean: dict[str, Any] = {}
    for key, value in attrs.items():
        if value is None:
            continue
        kv = span.attributes.add(key=key)
        if isinstance(value, bool):
            kv.value.bool_value = value
        elif isinstance(value, int):
            kv.value.int_value = value
        else:
            kv.value.string_value = value
        clean[key] = value
    result, total = map_protobuf(request.SerializeToString())
    direct = map_span(SpanView(clean, {}, "", "ab" * 16, "cd" * 8, 0, END_NS))
    assert total == 1
    if isinstance(direct, Mapped):
        assert result.records == [direct.record]
    elif isinstance(direct, Ignored):
        assert dict(result.ignored) == {direct.reason: 1}
    else:
        assert dict(result.rejected) == {direct.reason: 1}
