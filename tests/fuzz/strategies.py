"""Seed inputs and hypothesis strategies (bytes) for every fuzz target.

Three kinds of input per target: arbitrary bytes, structured generation
(JSON values with the keys the parser reads, near its limits), and
mutations of realistic seeds (byte flips, splices, insertions of the tokens
parsers trip on: ``1e308``, ``-1``, huge ints, ``NaN``, deep brackets, BOMs,
NULs, invalid UTF-8). Seeds are built by the code a real writer uses (a real
pipeline's checkpoint, the OTel SDK's protobuf encoder), not typed by hand.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import orjson
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
NOV = 1_793_491_200  # 2026-11-01T00:00:00Z

INTERESTING = [
    b"1e308", b"-1", b"0", b"-0", b"1.5", b"9007199254740993", b"1" * 400, b"NaN", b"Infinity", b"null", b"true",
    b'""', b"[]", b"{}", b"[" * 64, b"{" * 64, b"\xef\xbb\xbf", b"\x00" * 8, b"\xff\xfe", b"\xc3\x28", b"\r\n",
    b"\\ud800", b'"\\u0000"', b"2026-11-31T25:61:61Z", b'"9999-12-31T23:59:59-14:00"', b"1e11", b"253402300800",
    b"*a", b"&a [1]", b"!!python/object:os.system", b"- ", b": ", b"\t", b"'", b"~",
]


def record_objects() -> list[dict[str, Any]]:
    """One record per usage shape and feature (canonical v1, docs/record-format.md)."""
    base: dict[str, Any] = {"ts": "2026-11-05T10:00:00Z", "request_id": "r1", "model": "gpt-4o",
                            "tenant": "team-a", "tokens_before": 1200, "tokens_after": 800,
                            "count_method": "tiktoken:o200k_base"}
    usages: list[dict[str, Any]] = [
        {"prompt_tokens": 900, "completion_tokens": 40, "prompt_tokens_details": {"cached_tokens": 300}},
        {"input_tokens": 900, "output_tokens": 40, "input_tokens_details": {"cached_tokens": 100}},
        {"input_tokens": 50, "cache_read_input_tokens": 700, "cache_creation_input_tokens": 100,
         "cache_creation": {"ephemeral_5m_input_tokens": 60, "ephemeral_1h_input_tokens": 40}, "output_tokens": 9},
        {"promptTokenCount": 900, "cachedContentTokenCount": 200, "candidatesTokenCount": 30,
         "thoughtsTokenCount": 5},
        {"inputTokens": 10, "cacheReadInputTokens": 20, "cacheWriteInputTokens": 30, "outputTokens": 4},
        {"prompt_tokens": 100, "completion_tokens": 1, "prompt_cache_hit_tokens": 60, "prompt_cache_miss_tokens": 40},
    ]
    out = [{**base, "usage": u, "request_id": f"r{i}"} for i, u in enumerate(usages)]
    out.append({"ts": NOV + 5, "model": "claude-sonnet-4-5", "would_have_saved": 30, "provider": "anthropic",
                "components": [{"name": "dedupe", "tokens_saved": 100}, {"name": "trim", "tokens_saved": 50}],
                "tokens_before": 500, "tokens_after": 300, "count_method": "provider"})
    out.append({"ts": (NOV + 9) * 1000, "request_id": 12345, "model": "m", "text_before": "hello there",
                "text_after": "hi"})
    return out


@functools.cache
def record_seeds() -> tuple[bytes, ...]:
    return tuple(orjson.dumps(obj) for obj in record_objects())


@functools.cache
def usage_seeds() -> tuple[bytes, ...]:
    return tuple(orjson.dumps(obj["usage"]) for obj in record_objects() if "usage" in obj)


@functools.cache
def price_seeds() -> tuple[bytes, ...]:
    table = (ROOT / "tests" / "fixtures" / "engine" / "prices_two_versions.yaml").read_bytes()
    small = (b'schema: llm-savings-prices/v1\nversions:\n  - version: "v1"\n'
             b'    effective_from: "2026-01-01T00:00:00Z"\n    source: s\n'
             b"    families:\n      f:\n        cache_write_5m_multiplier: 1.25\n"
             b'        billed_token_factor: {"tiktoken:o200k_base": 1.3}\n'
             b"    models:\n      m:\n        family: f\n        aliases: [a/m]\n"
             b"        input: 1.0\n        output: 2.0\n        cache_read: 0.1\n")
    return (small, table)


@functools.cache
def config_seeds() -> tuple[bytes, ...]:
    full = (b"schema: llm-savings-config/v1\n"
            b'listen: "127.0.0.1:9464"\n'
            b"state_dir: /tmp/state\n"
            b"timezone: Europe/Paris\n"
            b"dedupe_window_days: 40\n"
            b"checkpoint_interval_seconds: 5\n"
            b"month_retention: 3\n"
            b"labels:\n  max_models: 500\n  max_tenants: 200\n  tenant_allowlist: [a, b]\n"
            b"sources:\n  - name: gateway\n    type: jsonl\n    paths: [\"/var/log/gw/*.jsonl\"]\n"
            b"    format: canonical\n    max_line_bytes: 1048576\n    poll_interval_seconds: 1.0\n"
            b"    watch: true\n"
            b"  - name: collector\n    type: otlp_file\n    paths: [/var/log/otel/*.json]\n"
            b'otlp:\n  enabled: true\n  listen: "127.0.0.1:4318"\n  max_body_bytes: 16777216\n'
            b"  bearer_token_file: null\n"
            b'otlp_push:\n  enabled: false\n  endpoint: "http://otel-collector:4318/v1/metrics"\n'
            b"  interval_seconds: 60\n")
    return (full, b"state_dir: /tmp/s\n", b"{}\n")


@functools.cache
def checkpoint_seeds() -> tuple[bytes, ...]:
    """A checkpoint as the sidecar writes it: a real pipeline's state after real records."""
    from exporter.engine.aggregate import Aggregates
    from exporter.engine.pipeline import Pipeline
    from exporter.prices.table import load_price_table
    from exporter.sidecar import checkpoint

    pipeline = Pipeline(load_price_table(ROOT / "tests" / "fixtures" / "engine" / "prices_two_versions.yaml"))
    for line in record_seeds():
        pipeline.ingest_line(line.replace(b'"gpt-4o"', b'"alpha"'))
    pipeline.ingest_line(b"not json")
    body = {"schema": "llm-savings-exporter/checkpoint/v1", "aggregates": pipeline.aggregates.to_state(),
            "offsets": {"gw": {"path": "/x", "offset": 10}}}
    blobs = pipeline.ledger.to_state()
    empty = {"schema": "llm-savings-exporter/checkpoint/v1", "aggregates": Aggregates().to_state()}
    return (checkpoint.encode(body, blobs), checkpoint.encode(empty, {}))


@functools.cache
def checkpoint_state_seeds() -> tuple[bytes, ...]:
    from exporter.sidecar import checkpoint

    out = []
    for data in checkpoint_seeds():
        body, blobs = checkpoint.decode(data)
        out.append(json.dumps(body["aggregates"]).encode() + b"\n" + b"".join(blobs.values()))
    return tuple(out)


@functools.cache
def otlp_protobuf_seeds() -> tuple[bytes, ...]:
    """Bodies encoded by the OTel SDK's own OTLP encoder from spans real instrumentations set."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from tests.fixtures.otlp.spans import make_spans

    spans = list(make_spans().values())
    return (encode_spans(spans).SerializeToString(), encode_spans(spans[:1]).SerializeToString())


@functools.cache
def otlp_json_seeds() -> tuple[bytes, ...]:
    from tests.fixtures.otlp.spans import make_spans, otlp_json_body

    lines = (ROOT / "tests" / "fixtures" / "otlp" / "collector_file_export.jsonl").read_bytes().splitlines()
    spans = list(make_spans().values())
    return (*[line for line in lines if line.strip()], orjson.dumps(otlp_json_body(spans[:3])))


def span_seeds() -> tuple[bytes, ...]:
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o",
             "gen_ai.response.id": "chatcmpl-1", "gen_ai.usage.input_tokens": 900,
             "gen_ai.usage.output_tokens": 40, "gen_ai.usage.cache_read.input_tokens": 300,
             "llm_savings.tokens_before": 1200, "llm_savings.tokens_after": 900,
             "llm_savings.count_method": "tiktoken:o200k_base"}
    oi = {"openinference.span.kind": "LLM", "llm.model_name": "claude", "llm.token_count.prompt": 100,
          "llm.token_count.completion": 5, "llm.token_count.prompt_details.cache_read": 50}
    return tuple(orjson.dumps({"attrs": a, "resource": {"tenant.id": "t"}, "scope": s, "trace_id": "ab" * 16,
                               "span_id": "cd" * 8, "start_ns": 1, "end_ns": NOV * 10**9})
                 for a, s in ((attrs, "opentelemetry.instrumentation.openai_v2"), (oi, "openinference")))


# --- mutation ---------------------------------------------------------------------


@st.composite
def mutated(draw: st.DrawFn, seeds: tuple[bytes, ...], max_ops: int = 6) -> bytes:
    """A seed after a few byte-level edits (flip, delete, insert, duplicate a span, splice)."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(0, max_ops))):
        op = draw(st.integers(0, 5))
        pos = draw(st.integers(0, len(data))) if data else 0
        if op == 0 and data:  # flip bits of one byte
            index = min(pos, len(data) - 1)
            data[index] ^= draw(st.integers(1, 255))
        elif op == 1 and data:  # delete a run
            data[pos:pos + draw(st.integers(1, 16))] = b""
        elif op == 2:  # insert a token parsers trip on
            data[pos:pos] = draw(st.sampled_from(INTERESTING))
        elif op == 3:  # insert random bytes
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == 4 and data:  # duplicate a span of the input
            end = min(len(data), pos + draw(st.integers(1, 64)))
            data[pos:pos] = data[pos:end] * draw(st.integers(1, 4))
        elif op == 5:  # replace a number with an interesting one
            digits = [i for i, b in enumerate(data) if 48 <= b <= 57]
            if digits:
                start = draw(st.sampled_from(digits))
                end = start
                while end < len(data) and 48 <= data[end] <= 57:
                    end += 1
                data[start:end] = draw(st.sampled_from(INTERESTING[:10]))
    return bytes(data)


def json_leaf() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(), st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.sampled_from([0, 1, -1, 2**53, 2**53 + 1, 2**63, 2**64, 10**30]),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=12),
        st.sampled_from(["", "provider", "tiktoken:o200k_base", "2026-11-05T10:00:00Z", "1793491200", "-5"]),
    )


def json_values(keys: list[str]) -> st.SearchStrategy[Any]:
    key = st.one_of(st.sampled_from(keys), st.text(max_size=8))
    return st.recursive(json_leaf(), lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(key, children, max_size=6)), max_leaves=24)


RECORD_KEYS = ["ts", "request_id", "model", "provider", "tenant", "tokens_before", "tokens_after", "count_method",
               "text_before", "text_after", "messages_before", "messages_after", "would_have_saved", "components",
               "name", "tokens_saved", "usage", "source_dialect"]
USAGE_KEYS = ["prompt_tokens", "completion_tokens", "prompt_tokens_details", "cached_tokens", "input_tokens",
              "output_tokens", "input_tokens_details", "cache_read_input_tokens", "cache_creation_input_tokens",
              "cache_creation", "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens", "promptTokenCount",
              "cachedContentTokenCount", "candidatesTokenCount", "thoughtsTokenCount", "inputTokens",
              "cacheReadInputTokens", "cacheWriteInputTokens", "outputTokens", "cache_write_tokens",
              "cache_creation_tokens", "prompt_cache_hit_tokens", "prompt_cache_miss_tokens"]
SPAN_KEYS = ["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.prompt_tokens",
             "gen_ai.usage.completion_tokens", "gen_ai.usage.cache_read.input_tokens",
             "gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_read_tokens",
             "gen_ai.usage.cache_write_tokens", "gen_ai.request.model", "gen_ai.response.model",
             "gen_ai.provider.name", "gen_ai.system", "gen_ai.response.id", "gen_ai.operation.name",
             "gen_ai.agent.name", "openinference.span.kind", "llm.model_name", "llm.token_count.prompt",
             "llm.token_count.completion", "llm.token_count.total", "llm.token_count.prompt_details.cache_read",
             "llm_savings.tokens_before", "llm_savings.tokens_after", "llm_savings.would_have_saved",
             "llm_savings.count_method", "llm_savings.request_id", "llm_savings.tenant", "gen_ai.usage.total_tokens"]


@st.composite
def record_objects_strategy(draw: st.DrawFn) -> bytes:
    obj = draw(st.dictionaries(st.sampled_from(RECORD_KEYS), json_values(RECORD_KEYS + USAGE_KEYS), max_size=10))
    if draw(st.booleans()):
        obj.setdefault("ts", draw(st.one_of(st.integers(-1, 2**45), st.sampled_from(["2026-11-05T10:00:00Z"]))))
        obj.setdefault("model", draw(st.text(min_size=1, max_size=8)))
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS) if _dumpable(obj) else b"{}"


def _dumpable(obj: Any) -> bool:
    try:
        orjson.dumps(obj)
    except TypeError:  # ints beyond 64 bits: orjson will not write them, json will
        return False
    return True


def _json_bytes(obj: Any) -> bytes:
    return json.dumps(obj).encode() if not _dumpable(obj) else orjson.dumps(obj)


@st.composite
def span_values(draw: st.DrawFn) -> Any:
    return draw(st.one_of(
        json_leaf(),
        st.sampled_from([{"$f": "nan"}, {"$f": "inf"}, {"$f": "-inf"}, {"$f": "1e308"}, {"$b": "00ff"}]),
        st.lists(json_leaf(), max_size=3),
    ))


@st.composite
def span_view_strategy(draw: st.DrawFn) -> bytes:
    attrs = draw(st.dictionaries(st.sampled_from(SPAN_KEYS), span_values(), max_size=10))
    resource = draw(st.dictionaries(st.sampled_from(["tenant.id", "llm_savings.tenant", "service.name"]),
                                    span_values(), max_size=2))
    return _json_bytes({"attrs": attrs, "resource": resource,
                        "scope": draw(st.sampled_from(["", "pydantic-ai", "openinference", "x"])),
                        "trace_id": draw(st.sampled_from(["", "ab" * 16])), "span_id": "cd" * 8,
                        "start_ns": draw(st.integers(0, 2**64 - 1)), "end_ns": draw(st.integers(0, 2**64 - 1))})


@st.composite
def otlp_json_strategy(draw: st.DrawFn) -> bytes:
    """OTLP/JSON documents built field by field, with wrong types where values belong."""
    def value() -> Any:
        return draw(st.one_of(
            st.fixed_dictionaries({"stringValue": st.one_of(st.text(max_size=6), json_leaf())}),
            st.fixed_dictionaries({"intValue": st.one_of(st.integers(-(2**70), 2**70).map(str), json_leaf())}),
            st.fixed_dictionaries({"doubleValue": json_leaf()}),
            st.fixed_dictionaries({"boolValue": json_leaf()}),
            st.fixed_dictionaries({"arrayValue": st.fixed_dictionaries({"values": st.lists(
                st.fixed_dictionaries({"intValue": st.integers(0, 9)}), max_size=2)})}),
            json_leaf(),
        ))

    attrs = [{"key": draw(st.one_of(st.sampled_from(SPAN_KEYS), json_leaf())), "value": value()}
             for _ in range(draw(st.integers(0, 8)))]
    span = {"traceId": draw(st.one_of(st.sampled_from(["ab" * 16, "q83v" * 4, ""]), json_leaf())),
            "spanId": draw(st.one_of(st.sampled_from(["cd" * 8, "zz"]), json_leaf())),
            "startTimeUnixNano": draw(st.one_of(st.integers(0, 2**64).map(str), json_leaf())),
            "endTimeUnixNano": draw(st.one_of(st.just(str(NOV * 10**9)), json_leaf())),
            "attributes": attrs if draw(st.integers(0, 9)) else draw(json_leaf())}
    doc = {"resourceSpans": [{"resource": {"attributes": []},
                              "scopeSpans": [{"scope": {"name": draw(st.sampled_from(["x", "pydantic-ai"]))},
                                              "spans": [span] * draw(st.integers(1, 3))}]}]}
    return _json_bytes(doc)


@st.composite
def otlp_protobuf_strategy(draw: st.DrawFn) -> bytes:
    """Protobuf requests built with the real message classes, with values at their type limits."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    scope.scope.name = draw(st.sampled_from(["", "pydantic-ai", "openinference.instrumentation"]))
    for _ in range(draw(st.integers(1, 3))):
        span = scope.spans.add()
        span.trace_id = draw(st.binary(max_size=17))
        span.span_id = draw(st.binary(max_size=9))
        span.start_time_unix_nano = draw(st.integers(0, 2**64 - 1))
        span.end_time_unix_nano = draw(st.integers(0, 2**64 - 1))
        for _ in range(draw(st.integers(0, 8))):
            kv = span.attributes.add()
            kv.key = draw(st.sampled_from(SPAN_KEYS))
            kind = draw(st.integers(0, 5))
            if kind == 0:
                kv.value.string_value = draw(st.text(max_size=10))
            elif kind == 1:
                kv.value.int_value = draw(st.integers(-(2**63), 2**63 - 1))
            elif kind == 2:
                kv.value.double_value = draw(st.floats())
            elif kind == 3:
                kv.value.bool_value = draw(st.booleans())
            elif kind == 4:
                kv.value.bytes_value = draw(st.binary(max_size=4))
            else:
                kv.value.array_value.values.add().int_value = 1
    return bytes(request.SerializeToString())


@st.composite
def yaml_documents(draw: st.DrawFn, keys: list[str]) -> bytes:
    """YAML built from JSON-like values (YAML is a superset) with the loader's keys."""
    value = draw(json_values(keys))
    text = json.dumps(value) if draw(st.booleans()) else _yaml_dump(value)
    return text.encode()


def _yaml_dump(value: Any) -> str:
    import yaml

    try:
        return str(yaml.safe_dump(value))
    except yaml.YAMLError:
        return "{}"


PRICE_KEYS = ["schema", "versions", "version", "effective_from", "source", "families", "models", "family", "aliases",
              "input", "output", "cache_read", "cache_write_5m", "cache_write_1h", "cache_write_5m_multiplier",
              "cache_write_1h_multiplier", "billed_token_factor", "llm-savings-prices/v1"]
CONFIG_KEYS = ["schema", "listen", "state_dir", "prices", "timezone", "dedupe_window_days",
               "checkpoint_interval_seconds", "month_retention", "labels", "max_models", "max_tenants",
               "tenant_allowlist", "sources", "name", "type", "paths", "format", "mapping", "max_line_bytes",
               "poll_interval_seconds", "watch", "otlp", "enabled", "max_body_bytes", "bearer_token_file",
               "otlp_push", "endpoint", "interval_seconds", "log_level", "llm-savings-config/v1"]


def strategies() -> dict[str, st.SearchStrategy[bytes]]:
    """Per target: arbitrary bytes | structured generation | mutated seeds."""
    binary = st.binary(max_size=512)
    return {
        "records_line": st.one_of(binary, record_objects_strategy(), mutated(record_seeds())),
        "usage": st.one_of(binary, json_values(USAGE_KEYS).map(_json_bytes), mutated(usage_seeds())),
        "prices": st.one_of(binary, yaml_documents(PRICE_KEYS), mutated(price_seeds())),
        "config": st.one_of(binary, yaml_documents(CONFIG_KEYS), mutated(config_seeds())),
        "checkpoint": st.one_of(binary, mutated(checkpoint_seeds())),
        "checkpoint_state": st.one_of(
            mutated(checkpoint_state_seeds()),
            st.builds(lambda v, b: _json_bytes(v) + b"\n" + b,
                      json_values(["cells", "components", "unpriced", "divergence", "duplicates", "rejected",
                                   "flagged", "rate_book", "newest_ts", "factors", "version", "model", "input"]),
                      st.binary(max_size=40))),
        "otlp_protobuf": st.one_of(binary, otlp_protobuf_strategy(), mutated(otlp_protobuf_seeds())),
        "otlp_json": st.one_of(binary, otlp_json_strategy(), mutated(otlp_json_seeds())),
        "span_mapping": st.one_of(span_view_strategy(), mutated(span_seeds())),
    }


def all_seeds() -> dict[str, tuple[bytes, ...]]:
    return {"records_line": record_seeds(), "usage": usage_seeds(), "prices": price_seeds(),
            "config": config_seeds(), "checkpoint": checkpoint_seeds(), "checkpoint_state": checkpoint_state_seeds(),
            "otlp_protobuf": otlp_protobuf_seeds(), "otlp_json": otlp_json_seeds(), "span_mapping": span_seeds()}
