"""Hypothesis properties: order, dedupe, splitting, signs, a total parser, no prompt text leaks."""

from __future__ import annotations

import functools
import json
import logging
import random
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.engine.aggregate import cell_dollars
from exporter.engine.pipeline import Pipeline
from exporter.engine.records import REJECTION_REASONS, Record, Rejection, parse_line, parse_object
from exporter.prices.table import PriceTable, load_price_table
from exporter.replay.replay import replay_files
from exporter.tokens.counter import TokenCounter
from tests.support import oracle

PRICES = Path(__file__).resolve().parents[1] / "fixtures" / "engine" / "prices_two_versions.yaml"
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ZONES = ("UTC", "America/New_York", "Asia/Kathmandu", "Pacific/Kiritimati", "Pacific/Pago_Pago")


@functools.cache
def prices() -> PriceTable:
    return load_price_table(PRICES)


@functools.cache
def counter() -> TokenCounter:
    return TokenCounter()


def totals(lines: list[bytes], timezone: str = "UTC") -> dict[str, Any]:
    p = Pipeline(prices(), timezone=timezone)
    for line in lines:
        p.ingest_line(line)
    return p.aggregates.month_totals()


@st.composite
def logs(draw: st.DrawFn, unique_ids: bool = False, max_size: int = 60) -> list[bytes]:
    """Lines of realistic records (all shapes, savings, shadow mode), bad lines, duplicates."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    size = draw(st.integers(0, max_size))
    if not unique_ids:
        return oracle.generate_log(rng, size)
    lines = []
    for index in range(size):
        if rng.random() < 0.1:
            lines.append(oracle.bad_line(rng) + b"\n")
        else:
            lines.append(json.dumps(oracle.good_record(rng, f"id-{index}")).encode() + b"\n")
    return lines


# --- the totals ----------------------------------------------------------------------------


@SETTINGS
@given(lines=logs(unique_ids=True), data=st.data(), zone=st.sampled_from(ZONES))
def test_totals_do_not_depend_on_record_order(
    lines: list[bytes], data: st.DataObject, zone: str
) -> None:
    shuffled = data.draw(st.permutations(lines))
    assert totals(shuffled, zone) == totals(lines, zone)  # exactly, floats included


@SETTINGS
@given(lines=logs(unique_ids=True))
def test_replaying_a_file_twice_equals_once(lines: list[bytes]) -> None:
    once, twice = totals(lines), totals(lines + lines)
    assert sorted(once) == sorted(twice)
    for month, first in once.items():
        second = twice[month]
        assert second["rejected"] == 2 * first["rejected"]  # a bad line is bad each time it is read
        assert second["duplicates"] == first["duplicates"] + first["requests"]  # every id came back
        for key in first:
            if key not in ("rejected", "duplicates"):
                assert second[key] == first[key], (month, key)


@SETTINGS
@given(lines=logs(), cut=st.floats(0, 1), zone=st.sampled_from(ZONES))
def test_splitting_a_log_into_two_files_changes_nothing(
    lines: list[bytes], cut: float, zone: str
) -> None:
    at = int(len(lines) * cut)
    with tempfile.TemporaryDirectory() as directory:
        whole, head, tail = (Path(directory) / name for name in ("whole", "head", "tail"))
        whole.write_bytes(b"".join(lines))
        head.write_bytes(b"".join(lines[:at]))
        tail.write_bytes(b"".join(lines[at:]))
        one, two = Pipeline(prices(), timezone=zone), Pipeline(prices(), timezone=zone)
        replay_files([str(whole)], one, None)
        replay_files([str(head), str(tail)], two, None)
    assert one.aggregates.month_totals() == two.aggregates.month_totals()


@SETTINGS
@given(lines=logs(max_size=120), zone=st.sampled_from(ZONES))
def test_engine_equals_oracle_on_random_logs(lines: list[bytes], zone: str) -> None:
    p = Pipeline(prices(), timezone=zone)
    expected = oracle.Oracle(oracle.load_prices(PRICES), zone)
    for line in lines:
        p.ingest_line(line)
        expected.line(line)
    got, want = p.aggregates.month_totals(), expected.result()["months"]
    assert sorted(got) == sorted(want)
    for month in want:
        for key in oracle.MONTH_KEYS_INT:
            assert got[month][key] == want[month][key], (month, key)
        for key in oracle.MONTH_KEYS_FLOAT:
            assert abs(got[month][key] - want[month][key]) <= 1e-9 * max(1.0, abs(want[month][key]))
        for key in oracle.MONTH_KEYS_OTHER:
            assert oracle.same(got[month][key], want[month][key]), (month, key)


@SETTINGS
@given(lines=logs(max_size=120))
def test_signs_and_rates(lines: list[bytes]) -> None:
    p = Pipeline(prices())
    for line in lines:
        p.ingest_line(line)
    for month in p.aggregates.month_totals().values():
        for key in ("usd_saved", "would_have_saved_usd", "spend_usd"):
            assert month[key] >= 0.0, key  # only the net cache savings may be negative
        assert 0.0 <= month["cache_hit_rate"] <= 1.0
        for key in oracle.MONTH_KEYS_INT:
            assert month[key] >= 0
    for cell_key, cell, rates in p.aggregates.priced_cells():
        assert all(v >= 0 for v in cell)
        if rates is not None:
            dollars = cell_dollars(cell, rates, cell_key[3])
            assert dollars.cache_read_savings >= 0.0 and dollars.cache_write_premium >= 0.0
            assert dollars.spend >= 0.0


# --- the parser is total ---------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
RECORD_KEYS = (
    "ts",
    "request_id",
    "model",
    "provider",
    "tenant",
    "tokens_before",
    "tokens_after",
    "count_method",
    "would_have_saved",
    "components",
    "usage",
    "text_before",
    "text_after",
    "messages_before",
)
USAGE_KEYS = (
    "prompt_tokens",
    "completion_tokens",
    "prompt_tokens_details",
    "cached_tokens",
    "cache_write_tokens",
    "prompt_cache_hit_tokens",
    "prompt_cache_miss_tokens",
    "input_tokens",
    "output_tokens",
    "input_tokens_details",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "cache_creation",
    "ephemeral_5m_input_tokens",
    "ephemeral_1h_input_tokens",
    "promptTokenCount",
    "cachedContentTokenCount",
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "inputTokens",
    "outputTokens",
    "cacheReadInputTokens",
    "cacheWriteInputTokens",
)
usage_like = st.recursive(
    st.integers() | st.none() | st.booleans() | st.floats(),
    lambda inner: st.dictionaries(st.sampled_from(USAGE_KEYS), inner, max_size=6),
    max_leaves=10,
)
ts_like = st.one_of(
    st.integers(),
    st.floats(),
    st.text(max_size=40),
    st.datetimes(timezones=st.timezones()).map(str),
    st.datetimes().map(lambda d: d.isoformat()),
)
record_like = st.dictionaries(
    st.sampled_from(RECORD_KEYS), json_values | usage_like | ts_like, max_size=len(RECORD_KEYS)
).map(lambda d: {"ts": 1793491200, "model": "alpha", **d})


def _check(result: Record | Rejection | None) -> None:
    assert result is None or isinstance(result, Record | Rejection)
    if isinstance(result, Rejection):
        assert result.reason in REJECTION_REASONS
        assert len(result.detail) <= 200


@settings(max_examples=400, deadline=None)
@given(raw=st.binary(max_size=300))
def test_parse_line_never_raises_on_arbitrary_bytes(raw: bytes) -> None:
    _check(parse_line(raw))


@settings(max_examples=300, deadline=None)
@given(lines=logs(max_size=5), data=st.data())
def test_parse_line_never_raises_on_mutated_records(
    lines: list[bytes], data: st.DataObject
) -> None:
    for line in lines:
        raw = bytearray(line)
        for _ in range(data.draw(st.integers(0, 4))):
            if not raw:
                break
            at = data.draw(st.integers(0, len(raw) - 1))
            raw[at] = data.draw(st.integers(0, 255))
        _check(parse_line(bytes(raw)))


@settings(max_examples=400, deadline=None)
@given(obj=record_like, zone=st.sampled_from(ZONES))
def test_parse_and_ingest_never_raise_on_json_like_objects(obj: dict[str, Any], zone: str) -> None:
    _check(parse_object(obj))
    p = Pipeline(prices(), timezone=zone)
    p.ingest_object(obj)  # decoded objects (OTLP) may hold ints of any size
    line = json.dumps(obj).encode()  # may hold NaN: then invalid_json
    _check(parse_line(line))
    p.ingest_line(line)
    assert (
        sum(
            m["requests"] + m["rejected"] + m["duplicates"]
            for m in p.aggregates.month_totals().values()
        )
        == 2
    )


# --- no prompt text anywhere ---------------------------------------------------------------------


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@settings(max_examples=150, deadline=None)
@given(
    obj=record_like,
    marker=st.text("abcdefghijklmnopqrstuvwxyz", min_size=12, max_size=16),
    data=st.data(),
)
def test_prompt_text_never_reaches_a_detail_label_log_or_checkpoint(
    obj: dict[str, Any], marker: str, data: st.DataObject
) -> None:
    marker = "MRK" + marker
    text = data.draw(st.text(max_size=40))
    for key in ("tokens_before", "tokens_after"):
        if data.draw(st.booleans()):
            obj.pop(key, None)
    obj["text_before"] = f"{text} {marker} {text}"
    if data.draw(st.booleans()):
        obj["text_after"] = marker
    else:
        obj["messages_after"] = [{"role": "user", "content": [{"type": "text", "text": marker}]}]
    for key in ("model", "tenant", "request_id", "provider", "count_method"):
        if isinstance(obj.get(key), str):
            assert marker not in obj[key]  # the marker is only in the text fields
    handler = _Collect()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        p = Pipeline(prices(), counter=counter())
        for line in (json.dumps(obj).encode(), json.dumps(obj).encode()[:-3]):
            result = parse_line(line, counter())
            if isinstance(result, Rejection):
                assert marker not in result.detail
            p.ingest_line(line)
        p.ingest_object(obj)
    finally:
        root.removeHandler(handler)
    assert not any(marker in message for message in handler.messages)
    state = json.dumps(p.aggregates.to_state(), default=str)
    assert marker not in state
    for cap in p.caps.all():
        assert not any(marker in value for value in cap.values)
    assert marker not in repr(p.ledger.to_state())
