"""The typed OTLP/JSON decode (``json_typed``) reads what the general decoder reads, or steps aside.

Random export requests mix well-formed parts with every way a part can be
odd: a value of the wrong JSON type, an integer past 64 bits, an id neither
hex nor base64, a snake_case or legacy name, an unknown field, a span that is
not an object, text outside ASCII. For each body the typed decode either
returns None (the general decoder takes it) or exactly the general decoder's
views and rejections; a body the general decoder refuses is never read by the
typed one. The captured bodies (the Collector's file export, the OTel SDK's
spans as OTLP/JSON) must take the typed path, so a typed decode that stepped
aside every time would fail here.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from exporter.sources.otlp.attributes import Unsupported
from exporter.sources.otlp.decode import UndecodableRequest, load_json, spans_from_json
from exporter.sources.otlp.file import records_from_otlp_json_line
from exporter.sources.otlp.json_typed import typed_spans
from exporter.sources.otlp.mapping import map_json, map_json_object, map_json_typed
from exporter.sources.otlp.spans import MappingOptions, Rejected, SpanView
from tests.fixtures.otlp.spans import make_spans

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "otlp" / "collector_file_export.jsonl"
KEYS = ["gen_ai.request.model", "gen_ai.response.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
        "gen_ai.response.id", "llm_savings.tenant", "tenant.id", "gen_ai.system", "gen_ai.input.messages",
        "http.method", "llm.token_count.prompt"]


def _norm(item: SpanView | Rejected) -> Any:
    """Comparable: ``Unsupported`` has identity equality."""
    if isinstance(item, Rejected):
        return item

    def plain(attrs: dict[str, Any]) -> dict[str, Any]:
        return {k: ("<unsupported>", v.kind) if isinstance(v, Unsupported) else (type(v).__name__, v)
                for k, v in attrs.items()}

    return (plain(item.attrs), plain(item.resource), item.scope_name, item.trace_id, item.span_id,
            item.start_ns, item.end_ns, item.parent_span_id)


def general(body: bytes, options: MappingOptions) -> Any:
    try:
        return [_norm(v) for v in spans_from_json(load_json(body), options)]
    except UndecodableRequest:
        return "undecodable"


def typed(body: bytes, options: MappingOptions) -> Any:
    views = typed_spans(body, options)
    return None if views is None else [_norm(v) for v in views]


big = st.integers(min_value=-(1 << 70), max_value=1 << 70)
text = st.text(max_size=12)
good_values = st.one_of(
    st.builds(lambda v: {"stringValue": v}, text),
    st.builds(lambda v: {"intValue": v}, st.one_of(st.integers(0, 10**6), st.integers(0, 10**6).map(str))),
)
values = st.one_of(
    good_values, good_values, good_values, good_values,
    st.builds(lambda v: {"stringValue": v}, text),
    st.builds(lambda v: {"intValue": v}, big),
    st.builds(lambda v: {"intValue": v},
              st.one_of(st.integers(-10, 10**20).map(str), st.sampled_from(["", "-", "+1", "1.5", "٣", "x"]))),
    st.builds(lambda v: {"boolValue": v}, st.booleans()),
    st.builds(lambda v: {"doubleValue": v}, st.one_of(st.floats(allow_nan=False, allow_infinity=False), big)),
    st.sampled_from([{"arrayValue": {"values": []}}, {"kvlistValue": {}}, {"bytesValue": "AAE="}, {},
                     {"arrayValue": None}]),
    st.sampled_from([{"stringValue": None}, {"stringValue": 5}, {"intValue": True}, {"intValue": None},
                     {"boolValue": "true"}, {"doubleValue": "1.5"}, {"foo": 1}, {"stringValue": "a", "intValue": 3}]),
    st.none(), st.just([]), st.just("x"),
)
good_kv = st.builds(lambda k, v: {"key": k, "value": v}, st.sampled_from(KEYS), good_values)
key_values = st.one_of(
    good_kv, good_kv, good_kv, good_kv, good_kv, good_kv, good_kv, good_kv,
    st.builds(lambda k, v: {"key": k, "value": v}, st.sampled_from(KEYS), values),
    st.builds(lambda k: {"key": k}, st.sampled_from(KEYS)),
    st.sampled_from([{"key": 5, "value": {}}, {"value": {}}, {"key": "k", "value": {}, "extra": 1}, "kv", None]),
)
attributes = st.one_of(st.lists(key_values, max_size=5), st.none(), st.just({}))
ids = st.one_of(
    st.binary(min_size=8, max_size=8).map(bytes.hex), st.binary(min_size=8, max_size=8).map(bytes.hex),
    st.binary(min_size=8, max_size=8).map(bytes.hex), st.binary(min_size=8, max_size=8).map(bytes.hex),
    st.binary(min_size=16, max_size=16).map(bytes.hex),
    st.binary(min_size=8, max_size=8).map(lambda b: base64.b64encode(b).decode()),
    st.binary(min_size=16, max_size=16).map(lambda b: base64.b64encode(b).decode()),
    st.sampled_from(["", "zz" * 8, "0" * 31 + "G", "A" * 16]),
    st.none(), st.just(7),
)
times = st.one_of(st.integers(0, 1 << 63), st.integers(0, 1 << 63), st.integers(0, 1 << 63), big,
                  st.integers(0, 10**20).map(str), st.sampled_from(["", "1e9", "x", "-1"]), st.none(),
                  st.just(1.5e18), st.booleans())
optional = ["name", "kind", "status", "events", "flags", "traceState", "links", "droppedAttributesCount"]
odd_fields = ["trace_id", "span_id", "parent_span_id", "start_time_unix_nano", "end_time_unix_nano", "newField"]


@st.composite
def spans(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 30)) == 0:
        return draw(st.sampled_from([None, "span", [], 3]))
    span: dict[str, Any] = {}
    for name, strategy in (("traceId", ids), ("spanId", ids), ("parentSpanId", ids), ("startTimeUnixNano", times),
                           ("endTimeUnixNano", times), ("attributes", attributes)):
        if draw(st.booleans()) or name == "attributes":
            span[name] = draw(strategy)
    for name in draw(st.lists(st.sampled_from(optional), max_size=3)):
        span[name] = draw(st.sampled_from([1, "chat", {"code": 1}, [],
                                           {"attributes": [{"key": "k", "value": {"doubleValue": 1e300}}]}]))
    if draw(st.integers(0, 12)) == 0:
        span[draw(st.sampled_from(odd_fields))] = draw(st.one_of(ids, times))
    return span


@st.composite
def requests(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 40)) == 0:
        return draw(st.sampled_from([[], "x", None, {"resourceSpans": None}, {"resourceSpans": {}}, {}]))
    resource_spans = []
    for _ in range(draw(st.integers(0, 2))):
        scope_spans = []
        for _ in range(draw(st.integers(0, 2))):
            scope: Any = draw(st.one_of(st.builds(lambda n: {"name": n}, st.one_of(text, st.none(), st.just(3))),
                                        st.just({}), st.none(), st.just({"name": "s", "version": "1"})))
            entry: dict[str, Any] = {"scope": scope, "spans": draw(st.lists(spans(), max_size=4))}
            if draw(st.integers(0, 15)) == 0:
                entry = {"instrumentationLibrary": scope, "spans": entry["spans"]}
            scope_spans.append(entry)
        resource: Any = draw(st.one_of(st.builds(lambda a: {"attributes": a}, attributes), st.none(), st.just({})))
        legacy = st.sampled_from(["scope_spans", "instrumentationLibrarySpans"])
        name = "scopeSpans" if draw(st.integers(0, 15)) else draw(legacy)
        resource_spans.append({"resource": resource, name: scope_spans})
    key = "resourceSpans" if draw(st.integers(0, 20)) else "resource_spans"
    return {key: resource_spans}


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests(), st.booleans())
def test_the_typed_decode_equals_the_general_one_or_steps_aside(doc: Any, ascii_only: bool) -> None:
    body = json.dumps(doc, ensure_ascii=ascii_only).encode()
    options = MappingOptions()
    fast = typed(body, options)
    event("typed" if fast is not None else "general")
    if fast is not None:
        assert fast == general(body, options)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(KEYS), values)
def test_each_attribute_value_reads_the_same(key: str, value: Any) -> None:
    """One attribute in a clean envelope: an odd value is read alike or sent to the general decoder."""
    span = {"attributes": [{"key": key, "value": value}]}
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
    fast = typed(body.encode(), MappingOptions())
    event("typed" if fast is not None else "general")
    if fast is not None:
        assert fast == general(body.encode(), MappingOptions())


@settings(max_examples=400, deadline=None)
@given(spans())
def test_each_span_reads_the_same(span: Any) -> None:
    """One span, its ids, times and fields drawn odd or not, in a clean envelope."""
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    fast = typed(body, MappingOptions())
    event("typed" if fast is not None else "general")
    if fast is not None:
        assert fast == general(body, MappingOptions())


@pytest.mark.parametrize("body", [
    b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":[{"key":"gen_ai.input.messages",'
    b'"value":{"stringValue":"\xff\xfe"}}]}]}]}]}',  # invalid UTF-8 in a value never read
    b'{"resourceSpans":[]', b"", b"[]", b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"\\ud800"}]}]}]}',
    b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":[{"key":"gen_ai.input.messages","value":{"arrayValue":'
    + b"[" * 2000 + b"]" * 2000 + b"}}]}]}]}]}",
])
def test_a_body_the_general_decoder_refuses_is_not_read_by_the_typed_one(body: bytes) -> None:
    assert general(body, MappingOptions()) == "undecodable"
    assert typed_spans(body, MappingOptions()) is None
    with pytest.raises(UndecodableRequest):
        map_json(body, MappingOptions())


def _sdk_body() -> bytes:
    from google.protobuf import json_format

    doc = json_format.MessageToDict(encode_spans(list(make_spans().values())))
    for resource_spans in doc["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return orjson.dumps(doc)


def _loads(line: bytes) -> bool:
    try:
        return bool(orjson.loads(line))
    except orjson.JSONDecodeError:
        return False  # the fixture's truncated line


def test_captured_bodies_take_the_typed_path_with_the_same_records() -> None:
    lines = [line for line in FIXTURE.read_bytes().splitlines() if b'"resourceSpans"' in line and _loads(line)]
    bodies = [_sdk_body(), *lines]
    for body in bodies:
        fast = map_json_typed(body, MappingOptions())
        assert fast is not None, body[:80]
        slow = map_json_object(load_json(body), MappingOptions())
        assert fast[1] == slow[1] > 0
        assert fast[0].records == slow[0].records
        assert (fast[0].rejected, fast[0].ignored) == (slow[0].rejected, slow[0].ignored)
    records, _ = records_from_otlp_json_line(lines[0])
    assert records == map_json_object(load_json(lines[0]), MappingOptions())[0].records


def test_a_snake_case_body_steps_aside_and_is_read_by_the_general_decoder() -> None:
    doc = {"resource_spans": [{"scope_spans": [{"spans": [{"trace_id": "ab" * 16, "span_id": "cd" * 8,
                                                           "end_time_unix_nano": "1794744000000000000",
                                                           "attributes": [{"key": "gen_ai.request.model",
                                                                           "value": {"stringValue": "gpt-4o"}}]}]}]}]}
    body = orjson.dumps(doc)
    assert typed_spans(body, MappingOptions()) is None
    result, count = map_json(body, MappingOptions(correlate=False))
    assert count == 1 and result.records[0]["model"] == "gpt-4o"
