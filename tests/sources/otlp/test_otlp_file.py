"""Collector file-exporter lines (one OTLP/JSON ExportTraceServiceRequest per line) -> records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from exporter.engine.records import Record, parse_object
from exporter.sources.otlp.file import records_from_otlp_json_line
from exporter.sources.otlp.mapping import map_protobuf
from tests.fixtures.otlp.spans import MODEL_CALLS, expected, make_spans, otlp_json_body

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "otlp" / "collector_file_export.jsonl"


def test_collector_file_export_lines() -> None:
    lines = FIXTURE.read_bytes().split(b"\n")
    outcomes = [records_from_otlp_json_line(line) for line in lines]
    traces, metrics, blank, truncated, openinference, trailing = outcomes
    assert traces == (
        [
            {
                "ts": 1794744000.0,
                "request_id": "chatcmpl-file-1",
                "model": "gpt-4o-2024-08-06",
                "provider": "openai",
                "tenant": "team-a",
                "source_dialect": "openai_v2",
                "usage": {
                    "prompt_tokens": 2000,
                    "completion_tokens": 150,
                    "prompt_tokens_details": {"cached_tokens": 1536},
                },
            }
        ],
        [],
    )
    assert metrics == ([], []) and blank == ([], []) and trailing == ([], [])
    assert truncated == ([], ["invalid_otlp"])
    assert openinference == (
        [
            {
                "ts": 1794744101.0,
                "request_id": "a1a2a3a4a5a6a7a8a9aaabacadaeafb0:b1b2b3b4b5b6b7b8",
                "model": "claude-sonnet-4-5-20250929",
                "provider": "anthropic",
                "source_dialect": "openinference",
                "source_flags": ["usage_no_cache_ttl"],
                "usage": {
                    "prompt_tokens": 1933,
                    "completion_tokens": 90,
                    "prompt_tokens_details": {"cache_write_tokens": 1733},
                },
            }
        ],
        ["invalid_count"],
    )
    assert b"SECRET" not in orjson.dumps(outcomes)
    for records, _ in outcomes:
        for record in records:
            assert isinstance(parse_object(record), Record)


def test_sdk_spans_written_as_a_line_match_the_http_path() -> None:
    spans = make_spans()
    line = orjson.dumps(otlp_json_body(list(spans.values())))
    records, reasons = records_from_otlp_json_line(line + b"\r\n")
    via_http, _ = map_protobuf(encode_spans(list(spans.values())).SerializeToString())
    assert records == via_http.records and reasons == []
    assert sorted(r["request_id"] for r in records) == sorted(
        expected(name, spans[name])["request_id"] for name in MODEL_CALLS
    )


def test_bom_and_non_object_lines() -> None:
    line = b'\xef\xbb\xbf{"resourceSpans": []}'
    assert records_from_otlp_json_line(line) == ([], [])
    assert records_from_otlp_json_line(b"[1, 2]") == ([], ["invalid_otlp"])
    assert records_from_otlp_json_line(b'{"resourceSpans": {}}') == ([], ["invalid_otlp"])
    assert records_from_otlp_json_line(b"\xff\xfe") == ([], ["invalid_otlp"])


@settings(deadline=1000, max_examples=200)
@given(line=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_fuzz_lines_never_raise(line: bytes) -> None:
    records, reasons = records_from_otlp_json_line(line)
    assert isinstance(records, list) and all(isinstance(r, str) for r in reasons)


@settings(deadline=1000, max_examples=100)
@given(
    tokens=st.lists(st.one_of(st.integers(-5, 10**6), st.text(max_size=4)), min_size=1, max_size=5),
)
def test_fuzz_one_outcome_per_model_span(tokens: list[Any]) -> None:
    spans = [
        {
            "traceId": f"{i + 1:032x}",
            "spanId": f"{i + 1:016x}",
            "endTimeUnixNano": "1794744000000000000",
            "attributes": [
                {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
                {
                    "key": "gen_ai.usage.input_tokens",
                    "value": {"intValue": str(t)} if isinstance(t, int) else {"stringValue": t},
                },
            ],
        }
        for i, t in enumerate(tokens)
    ]
    line = orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})
    records, reasons = records_from_otlp_json_line(line)
    assert len(records) + len(reasons) == len(tokens)
    assert set(reasons) <= {"invalid_count"}
