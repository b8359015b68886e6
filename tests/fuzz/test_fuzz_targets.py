"""Short fuzz run of every untrusted-input parser, kept crashers, and memory bounds.

Each target (``tests/fuzz/targets.py``) gets ``fuzz-default``'s examples
(80, ``deadline=1000`` ms) from arbitrary bytes, structured generation and
mutated realistic seeds. The long run is ``scripts/fuzz.sh SECONDS``. Every
file in ``tests/fuzz/regressions/`` is a crasher once found, replayed here.
The memory tests feed each parser one large hostile input under tracemalloc
and bound the peak of Python allocations by a small multiple of its size.
"""

from __future__ import annotations

import gzip
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from hypothesis import given

from exporter.engine.records import Rejection, parse_line
from tests.fuzz import targets
from tests.fuzz.profiles import fuzz_settings
from tests.fuzz.strategies import all_seeds, strategies

STRATEGIES = strategies()


def _make_test(name: str) -> Callable[[], None]:
    target = targets.TARGETS[name]

    @fuzz_settings()
    @given(STRATEGIES[name])
    def run(data: bytes) -> None:
        target(data)

    return run


@pytest.mark.parametrize("name", sorted(targets.TARGETS))
def test_fuzz_target(name: str) -> None:
    _make_test(name)()


@pytest.mark.parametrize("name", sorted(targets.TARGETS))
def test_seeds_are_accepted_inputs(name: str) -> None:
    """The seeds are valid inputs, so mutations start from the parser's accepting paths."""
    for seed in all_seeds()[name]:
        targets.TARGETS[name](seed)


@pytest.mark.parametrize("case", targets.regression_cases(), ids=lambda p: p.name)
def test_regression_case(case: Path) -> None:
    targets.target_of(case)(case.read_bytes())


def test_every_regression_file_names_a_target() -> None:
    for case in targets.regression_cases():
        assert case.name.split("-", 1)[0] in targets.TARGETS, case.name


# --- memory and time on large inputs -----------------------------------------------

MIB = 1 << 20


def _big_record_line() -> bytes:
    obj = {"ts": "2026-11-05T10:00:00Z", "request_id": "r" * MIB, "model": "m" * MIB, "tenant": "t" * MIB,
           "components": [{"name": f"c{i}", "tokens_saved": 1} for i in range(20_000)],
           "tokens_before": 10, "tokens_after": 5}
    return orjson.dumps(obj)


def _big_otlp_json() -> bytes:
    attrs: list[dict[str, object]] = [{"key": f"gen_ai.usage.x{i}", "value": {"intValue": str(i)}}
                                      for i in range(5_000)]
    spans: list[dict[str, object]] = [
        {"traceId": "ab" * 16, "spanId": f"{i:016x}", "endTimeUnixNano": "1794744000000000000",
              "attributes": [{"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
                             {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "5"}}]}
             for i in range(5_000)]
    first: list[dict[str, object]] = spans[0]["attributes"]  # type: ignore[assignment]
    first += attrs
    return orjson.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]})


def _big_otlp_protobuf() -> bytes:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for i in range(5_000):
        span = scope.spans.add()
        span.trace_id = bytes(16)
        span.span_id = i.to_bytes(8, "big")
        span.end_time_unix_nano = 1794744000000000000
        for key, value in (("gen_ai.request.model", "gpt-4o"), ("gen_ai.operation.name", "chat")):
            kv = span.attributes.add()
            kv.key, kv.value.string_value = key, value
        kv = span.attributes.add()
        kv.key, kv.value.int_value = "gen_ai.usage.input_tokens", 7
    return bytes(request.SerializeToString())


def _yaml_bomb() -> bytes:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    return ("\n".join(lines) + "\n").encode()


LARGE: dict[str, Callable[[], bytes]] = {
    "records_line: 10 MiB of '['": lambda: b"[" * (10 * MIB),
    "records_line: 1 MiB labels, 20k components": _big_record_line,
    "records_line: 10 MiB NUL run": lambda: b"\x00" * (10 * MIB),
    "usage: 100k nested objects": lambda: b'{"prompt_tokens_details":' * 100_000 + b"1" + b"}" * 100_000,
    "prices: billion laughs": _yaml_bomb,
    "prices: 4 MiB of one scalar": lambda: b"schema: " + b"x" * (4 * MIB) + b"\n",
    "config: billion laughs": _yaml_bomb,
    "config: 100k nested lists": lambda: b"[" * 100_000,
    "checkpoint: header claims 1 TiB": lambda: (b"LLMSAVINGS-CHECKPOINT 1\n"
                                                b'{"body_len": 1099511627776, "blob_days": [], "sha256": "0"}\n'),
    "checkpoint: 8 MiB without newline": lambda: b"LLMSAVINGS-CHECKPOINT 1\n" + b"{" * (8 * MIB),
    "otlp_json: 5k spans, 5k attributes on one": _big_otlp_json,
    "otlp_json: 10 MiB of '['": lambda: b"[" * (10 * MIB),
    "otlp_protobuf: 5k spans": _big_otlp_protobuf,
    "otlp_protobuf: gzip bomb bytes as a body": lambda: gzip.compress(b"\x00" * (64 * MIB)),
}
TARGET_OF = {label: label.split(":")[0] for label in LARGE}
# Peak Python allocations allowed while parsing: 24 bytes per input byte (decoded JSON
# objects are larger than their text) plus 64 MiB; a parser that expands its input
# (a YAML alias bomb, a gzip body) would blow far past it.
PER_BYTE, SLACK = 24, 64 * MIB


@pytest.mark.parametrize("label", sorted(LARGE))
def test_large_hostile_input_is_bounded_in_memory_and_time(label: str) -> None:
    data = LARGE[label]()
    target = targets.TARGETS[TARGET_OF[label]]
    # CPU seconds of this process, not wall time: the bound is on the parser's work (a blow-up is
    # many times over it), and other processes on a shared machine must not move it
    started = time.process_time()
    target(data)
    elapsed = time.process_time() - started
    tracemalloc.start()
    try:
        target(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    bound = PER_BYTE * len(data) + SLACK
    print(f"{label}: {len(data)} bytes, peak {peak / MIB:.1f} MiB (bound {bound / MIB:.0f}), {elapsed:.2f} CPU-s")
    assert peak < bound, f"{label}: peak {peak} bytes for a {len(data)}-byte input"
    assert elapsed < 5.0, f"{label}: {elapsed:.1f} CPU-s"


def test_fast_path_refuses_invalid_utf8() -> None:
    line = (targets.REGRESSIONS / "records_line-fastpath-utf8.bin").read_bytes()
    result = parse_line(line)
    assert isinstance(result, Rejection) and result.reason == "invalid_utf8", result


def test_fast_path_survives_deep_nesting() -> None:
    line = (targets.REGRESSIONS / "records_line-deep-unknown-key.bin").read_bytes()
    result = parse_line(line)
    assert isinstance(result, Rejection) and result.reason == "invalid_json", result


def test_pipeline_counts_a_too_deep_line_and_keeps_the_next() -> None:
    from exporter.engine.pipeline import Pipeline
    from exporter.prices.table import load_price_table

    pipeline = Pipeline(load_price_table())
    good = b'{"ts": "2026-11-10T12:00:00Z", "request_id": "g1", "model": "gpt-4o"}'
    for line in (good, (targets.REGRESSIONS / "records_line-deep-unknown-key.bin").read_bytes(),
                 good.replace(b"g1", b"g2")):
        pipeline.ingest_line(line)
    totals = pipeline.aggregates.month_totals()
    assert totals["2026-11"]["requests"] == 2
    assert dict(pipeline.aggregates.rejected) == {("unknown", "invalid_json"): 1}
