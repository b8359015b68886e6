"""Every captured dialect fixture, through the receiver's real mapping and a priced pipeline,
against the fake provider's ground truth (tests/fixtures/dialects, tests/support/dialect_truth.py).

Requests, every billing tier and the dollars must equal the truth; where the instrumentation
itself does not carry a number (the table in ``dialect_truth``), the records must carry the
completeness flag that says so, and the counts equal what the instrumentation did report.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from exporter.engine.aggregate import CACHE_READ, FRESH, OUTPUT, REQUESTS, WRITE_1H, WRITE_5M
from exporter.engine.pipeline import Pipeline
from exporter.engine.records import SOURCE_FLAGS, Record, parse_object
from exporter.prices.table import load_price_table
from exporter.sources.formats.litellm import to_canonical
from exporter.sources.otlp.mapping import MappingOptions, map_protobuf
from tests.live.spans import FIXTURES, request_bytes
from tests.support.dialect_truth import TIERS, Expected, deviates, expected_for

PRICES = load_price_table()
CAPTURE_TS = 1796100000.0  # 2026-12-01, the capture's month: same price version as the spans
OTLP_DIALECTS = sorted(
    p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "litellm_payload"
) if FIXTURES.is_dir() else []
CASES = [
    (d, p.stem) for d in OTLP_DIALECTS for p in sorted((FIXTURES / d).glob("*.json"))
]
PAYLOAD_CASES = sorted(
    p.name[: -len(".jsonl")] for p in (FIXTURES / "litellm_payload").glob("*.jsonl")
) if (FIXTURES / "litellm_payload").is_dir() else []


def _pipeline() -> Pipeline:
    return Pipeline(PRICES, wall_clock=lambda: 4e9)


def _totals(pipeline: Pipeline) -> dict[str, Any]:
    sums = dict.fromkeys((*TIERS, "requests"), 0)
    for cell in pipeline.aggregates.cells.values():
        sums["requests"] += cell[REQUESTS]
        for tier, index in zip(TIERS, (FRESH, CACHE_READ, WRITE_5M, WRITE_1H, OUTPUT), strict=True):
            sums[tier] += cell[index]
    months = pipeline.aggregates.month_totals()
    sums["spend_usd"] = round(sum(m["spend_usd"] for m in months.values()), 9)
    sums["rejected"] = sum(m["rejected"] for m in months.values())
    sums["unpriced"] = sum(m["unpriced"] for m in months.values())
    return sums


def _paid(records: list[Record]) -> list[Record]:
    """The records of provider calls: a response-cache hit (the gateway answered from its own cache)
    carries the usage of the call that paid, so it is not spend (test_gateway_fixtures checks it)."""
    return [r for r in records if "response_cache_hit" not in r.flags]


def _count(records: list[Record]) -> tuple[dict[str, Any], Counter[str]]:
    pipeline = _pipeline()
    flags: Counter[str] = Counter()
    for record in _paid(records):
        pipeline.apply(record)
        flags.update(f for f in record.flags if f in SOURCE_FLAGS)
    return _totals(pipeline), flags


def _truth(expected: Expected) -> dict[str, Any]:
    pipeline = _pipeline()
    for obj in expected.records:
        record = parse_object(obj)
        assert isinstance(record, Record), record
        pipeline.apply(record)
    return _totals(pipeline)


def _mapped(dialect: str, case: str) -> tuple[list[Record], Counter[str], dict[str, Any]]:
    doc = json.loads((FIXTURES / dialect / f"{case}.json").read_text())
    options = MappingOptions()  # one receiver: its memory spans the case's export requests
    records: list[Record] = []
    ignored: Counter[str] = Counter()
    for request in doc["requests"]:
        assert "json" not in request.get("content_type", "protobuf")
        result, _ = map_protobuf(request_bytes(request), options)
        assert not result.rejected, result.rejected
        ignored.update(result.ignored)
        for obj in result.records:
            record = parse_object(obj)
            assert isinstance(record, Record), (obj, record)
            records.append(record)
    return records, ignored, doc


def test_fixtures_are_there() -> None:
    assert len(CASES) >= 100, "tests/fixtures/dialects missing: merge live-capture"
    assert len(PAYLOAD_CASES) >= 10


@pytest.mark.parametrize(("dialect", "case"), CASES, ids=[f"{d}/{c}" for d, c in CASES])
def test_captured_case_counts_like_the_provider_billed(dialect: str, case: str) -> None:
    records, ignored, doc = _mapped(dialect, case)
    expected = expected_for(dialect, doc["calls"], CAPTURE_TS)
    got, flags = _count(records)
    want = _truth(expected)
    assert got["rejected"] == 0 and got["unpriced"] == 0
    assert got["requests"] == expected.requests
    assert {t: got[t] for t in TIERS} == expected.tiers
    assert got["spend_usd"] == pytest.approx(want["spend_usd"], rel=1e-9, abs=1e-12)
    assert flags == expected.flags
    if not deviates(dialect, doc["calls"]):
        exact = _truth(expected_for("exact", doc["calls"], CAPTURE_TS))
        assert got["spend_usd"] == pytest.approx(exact["spend_usd"], rel=1e-9, abs=1e-12)
    if dialect == "anthropic_native_openinference":  # two spans per call, counted once
        assert ignored["same_call"] + _duplicates(records) == len(doc["calls"])
        assert {r.source_dialect for r in records} == {"anthropic_sdk"}  # the most complete


def _duplicates(records: list[Record]) -> int:
    ids = Counter(r.request_id for r in records)
    return sum(n - 1 for n in ids.values())


@pytest.mark.parametrize("case", PAYLOAD_CASES)
def test_litellm_payload_lines_count_like_the_provider_billed(case: str) -> None:
    calls = json.loads((FIXTURES / "litellm_payload" / f"{case}.calls.json").read_text())["calls"]
    records = []
    for line in (FIXTURES / "litellm_payload" / f"{case}.jsonl").read_text().splitlines():
        record = parse_object(to_canonical(json.loads(line)))
        assert isinstance(record, Record), record
        records.append(record)
    got, flags = _count(records)
    expected = expected_for("litellm_payload", calls, CAPTURE_TS)
    assert got["requests"] == expected.requests
    assert {t: got[t] for t in TIERS} == expected.tiers
    assert got["spend_usd"] == pytest.approx(_truth(expected)["spend_usd"], rel=1e-9, abs=1e-12)
    assert not flags


# --- counted once, whatever the export requests -----------------------------------------------


def _split_request(dialect: str, case: str) -> list[bytes]:
    """The case's spans, one export request per span, in the order captured."""
    doc = json.loads((FIXTURES / dialect / f"{case}.json").read_text())
    bodies = []
    for request in doc["requests"]:
        msg = ExportTraceServiceRequest()
        msg.ParseFromString(request_bytes(request))
        for rs in msg.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    one = ExportTraceServiceRequest()
                    out_rs = one.resource_spans.add()
                    out_rs.resource.CopyFrom(rs.resource)
                    out_ss = out_rs.scope_spans.add()
                    out_ss.scope.CopyFrom(ss.scope)
                    out_ss.spans.add().CopyFrom(span)
                    bodies.append(one.SerializeToString())
    return bodies


def _count_bodies(bodies: list[bytes], options: MappingOptions) -> tuple[dict[str, Any], list[Record]]:
    pipeline = _pipeline()
    records = []
    for body in bodies:
        result, _ = map_protobuf(body, options)
        for obj in result.records:
            record = parse_object(obj)
            assert isinstance(record, Record)
            records.append(record)
            pipeline.apply(record)
    return _totals(pipeline), records


@pytest.mark.parametrize("case", ["create_mixed", "create_stream_mixed", "messages_stream_mixed"])
@pytest.mark.parametrize("order", ["captured", "reversed"])
def test_nested_and_unlinked_spans_count_once_across_export_requests(case: str, order: str) -> None:
    bodies = _split_request("anthropic_native_openinference", case)
    assert len(bodies) == 2
    if order == "reversed":
        bodies.reverse()
    got, records = _count_bodies(bodies, MappingOptions())
    assert got["requests"] == 1
    assert len({r.request_id for r in records}) == 1  # the later span is a duplicate of the first
    first = records[0].source_dialect
    if first == "anthropic_sdk":  # the SDK span (5m/1h split) came first: exact
        assert (got["cache_write_5m"], got["cache_write_1h"]) == (600, 400)
    else:  # OpenInference's came first: it wins, flagged, 1h writes counted as 5m
        assert first == "openinference"
        assert "usage_no_cache_ttl" in records[0].flags
        assert (got["cache_write_5m"], got["cache_write_1h"]) == (1000, 0)


def test_resent_export_request_keeps_its_ids() -> None:
    bodies = _split_request("anthropic_native_openinference", "create_mixed")
    options = MappingOptions()
    got, records = _count_bodies([*bodies, *bodies], options)
    assert got["requests"] == 1
    assert len({r.request_id for r in records}) == 1


def test_same_response_id_in_two_traces_counts_once() -> None:
    body = _split_request("anthropic_native", "create_mixed")[0]
    msg = ExportTraceServiceRequest()
    msg.ParseFromString(body)
    msg.resource_spans[0].scope_spans[0].spans[0].trace_id = b"\x01" * 16
    got, _ = _count_bodies([body, msg.SerializeToString()], MappingOptions())
    assert got["requests"] == 1


def test_fingerprint_needs_different_dialects_and_close_end_times() -> None:
    sdk, oi = _split_request("anthropic_native_openinference", "messages_stream_mixed")
    # the same instrumentation twice with equal numbers: two calls
    msg = ExportTraceServiceRequest()
    msg.ParseFromString(sdk)
    span = msg.resource_spans[0].scope_spans[0].spans[0]
    span.span_id = b"\x02" * 8
    for kv in span.attributes:
        if kv.key == "gen_ai.response.id":
            kv.value.string_value = "msg_other"
    got, _ = _count_bodies([sdk, msg.SerializeToString()], MappingOptions())
    assert got["requests"] == 2
    # OpenInference's span ending 5 s after the SDK's: not the same call
    msg = ExportTraceServiceRequest()
    msg.ParseFromString(oi)
    span = msg.resource_spans[0].scope_spans[0].spans[0]
    span.end_time_unix_nano += 5_000_000_000
    got, _ = _count_bodies([sdk, msg.SerializeToString()], MappingOptions())
    assert got["requests"] == 2
    # within the tolerance: one call
    got, _ = _count_bodies([sdk, oi], MappingOptions())
    assert got["requests"] == 1


def test_correlation_off_counts_every_span() -> None:
    bodies = _split_request("anthropic_native_openinference", "create_mixed")
    got, _ = _count_bodies(bodies, MappingOptions(correlate=False))
    assert got["requests"] == 2


def test_fixture_root_is_the_repository_one() -> None:
    assert Path(__file__).resolve().parents[2] / "fixtures" / "dialects" == FIXTURES
