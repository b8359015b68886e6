"""The msgspec fast path must agree with the reference parser on every line it accepts."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.engine.fastparse import _Unusual, _Usage, fast_parse, fast_ts, fast_usage
from exporter.engine.records import MAX_EPOCH_SECONDS, Record, Rejection, parse_object, parse_ts
from exporter.engine.usage import Usage, UsageError, normalise_usage

counts = st.one_of(st.integers(-5, 10**6), st.sampled_from([True, False, 2.0, 1.5, None, "7", 2**53, 2**53 - 1]))
labels = st.one_of(st.none(), st.text(max_size=8), st.integers(0, 99), st.booleans())
usage_blocks = st.one_of(
    st.none(),
    st.fixed_dictionaries({"prompt_tokens": counts, "completion_tokens": counts},
                          optional={"prompt_tokens_details": st.one_of(st.none(), st.fixed_dictionaries(
                              {}, optional={"cached_tokens": counts, "cache_write_tokens": counts}))}),
    st.fixed_dictionaries({"input_tokens": counts, "output_tokens": counts},
                          optional={"cache_read_input_tokens": counts, "cache_creation_input_tokens": counts,
                                    "cache_creation": st.fixed_dictionaries(
                                        {}, optional={"ephemeral_5m_input_tokens": counts,
                                                      "ephemeral_1h_input_tokens": counts})}),
    st.fixed_dictionaries({"promptTokenCount": counts},
                          optional={"cachedContentTokenCount": counts, "thoughtsTokenCount": counts}),
    st.fixed_dictionaries({"inputTokens": counts, "outputTokens": counts}),
    st.dictionaries(st.text(max_size=5), counts, max_size=3),
    st.integers(),
)
service_tiers = st.one_of(st.none(), st.sampled_from(["flex", "Priority", "batch", "", "default", "a" * 33,
                                                     "has space", "scale-1_x"]),
                          st.text(max_size=6), st.integers(), st.booleans())
records = st.fixed_dictionaries(
    {},
    optional={
        "ts": st.one_of(st.integers(-10, 2 * 10**12), st.floats(allow_nan=False, allow_infinity=False),
                        st.sampled_from(["2026-11-03T10:00:00Z", "2026-11-03T10:00:00+05:30", "2026-11-03",
                                         "nope", "", True])),
        "model": st.one_of(st.sampled_from(["gpt-4o", "", "x"]), st.integers(), st.none()),
        "request_id": labels,
        "tenant": labels,
        "provider": labels,
        "count_method": st.one_of(st.none(), st.sampled_from(["provider", "tiktoken:o200k_base"]), st.integers()),
        "tokens_before": counts,
        "tokens_after": counts,
        "would_have_saved": counts,
        "components": st.one_of(st.none(), st.lists(st.fixed_dictionaries(
            {"name": st.sampled_from(["a", "", 3]), "tokens_saved": counts}), max_size=3), st.integers()),
        "usage": usage_blocks,
        "extra": st.integers(),
        "response_cache": st.one_of(st.none(), st.sampled_from(["exact", "semantic", "unspecified", "", "EXACT"]),
                                    st.integers(), st.booleans()),
        "requested_model": st.one_of(st.none(), st.sampled_from(["gpt-4o", "gpt-4o-mini", ""]), st.integers()),
        "source_flags": st.one_of(st.just(["response_cache_hit"]), st.lists(st.sampled_from(
            ["response_cache_hit", "usage_no_cache_ttl", "made_up"]), max_size=2), st.integers()),
        "service_tier": service_tiers,
        "optimizer": st.one_of(st.none(), st.integers(), st.fixed_dictionaries(
            {"model": st.sampled_from(["gpt-4o-mini", ""]), "usage": usage_blocks},
            optional={"provider": labels, "service_tier": service_tiers})),
    },
)


@settings(max_examples=600, deadline=None)
@given(records)
def test_fast_path_equals_reference(obj: dict[str, Any]) -> None:
    line = json.dumps(obj).encode()
    fast = fast_parse(line, Record, parse_ts, MAX_EPOCH_SECONDS)
    reference = parse_object(orjson.loads(line))
    if fast is not None:
        assert fast == reference


@pytest.mark.parametrize(("value", "expected"), [("flex", "flex"), ("PRIORITY", "priority"), ("", None),
                                                ("on_demand-2", "on_demand-2")])
def test_service_tier_is_read_alike_on_both_paths(value: str, expected: str | None) -> None:
    line = json.dumps({"ts": 1_760_000_000, "model": "m", "service_tier": value}).encode()
    fast = fast_parse(line, Record, parse_ts, MAX_EPOCH_SECONDS)
    reference = parse_object(orjson.loads(line))
    assert isinstance(reference, Record) and fast == reference
    assert reference.service_tier == expected


@pytest.mark.parametrize(("value", "expected"), [("flex", "flex"), ("PRIORITY", "priority"), ("", None)])
def test_optimizer_service_tier_is_read_alike_on_both_paths(value: str, expected: str | None) -> None:
    line = json.dumps({"ts": 1_760_000_000, "model": "m", "optimizer": {
        "model": "o", "service_tier": value, "usage": {"prompt_tokens": 5, "completion_tokens": 1}}}).encode()
    fast = fast_parse(line, Record, parse_ts, MAX_EPOCH_SECONDS)
    reference = parse_object(orjson.loads(line))
    assert isinstance(reference, Record) and fast == reference
    assert reference.optimizer is not None and reference.optimizer.service_tier == expected


@pytest.mark.parametrize("value", ["a" * 33, "flex tier", 3])
def test_a_bad_optimizer_service_tier_is_refused_with_a_reason(value: Any) -> None:
    line = json.dumps({"ts": 1_760_000_000, "model": "m", "optimizer": {
        "model": "o", "service_tier": value, "usage": {"prompt_tokens": 5, "completion_tokens": 1}}}).encode()
    assert fast_parse(line, Record, parse_ts, MAX_EPOCH_SECONDS) is None
    reference = parse_object(orjson.loads(line))
    assert isinstance(reference, Rejection) and reference.reason == "invalid_field"
    assert "optimizer.service_tier" in reference.detail


@pytest.mark.parametrize("value", ["a" * 33, "flex tier", "fléx", 3, ["flex"]])
def test_a_bad_service_tier_is_refused_with_a_reason(value: Any) -> None:
    line = json.dumps({"ts": 1_760_000_000, "model": "m", "service_tier": value}).encode()
    assert fast_parse(line, Record, parse_ts, MAX_EPOCH_SECONDS) is None
    reference = parse_object(orjson.loads(line))
    assert isinstance(reference, Rejection) and reference.reason == "invalid_field"
    assert "service_tier" in reference.detail


def test_fast_path_takes_ordinary_lines() -> None:
    line = (b'{"ts":"2026-11-03T10:00:00Z","request_id":"r1","model":"gpt-4o","tokens_before":10,'
            b'"tokens_after":4,"usage":{"prompt_tokens":5,"completion_tokens":1}}')
    fast = fast_parse(line, Record, parse_ts, MAX_EPOCH_SECONDS)
    assert fast is not None and fast == parse_object(orjson.loads(line))


def test_lines_with_text_go_to_the_reference_path() -> None:
    line = b'{"ts":1,"model":"m","text_before":"a","text_after":"b"}'
    assert fast_parse(line, Record, parse_ts, MAX_EPOCH_SECONDS) is None


# --- the pieces: timestamps and usage blocks ----------------------------------------

def _reference_ts(text: str) -> float | None:
    try:
        return parse_ts(text)
    except ValueError:
        return None


ts_texts = st.one_of(
    # the common shape, fractions of 0-7 digits, any instant up to the last accepted one and a bit past it
    st.builds(
        lambda dt, fraction: dt.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z",
        st.datetimes(min_value=datetime(1969, 12, 31), max_value=datetime(9999, 12, 31, 23, 59, 59)),
        st.one_of(st.just(""), st.from_regex(r"\.[0-9]{0,7}", fullmatch=True)),
    ),
    # near misses: one character replaced anywhere
    st.builds(
        lambda base, index, char: base[:index] + char + base[index + 1:],
        st.sampled_from(["2026-11-03T10:20:30Z", "2026-11-03T10:20:30.123Z", "9999-12-30T00:00:00Z"]),
        st.integers(0, 23),
        st.sampled_from(list("0159:-.TZz +٣\u00b2")),
    ),
    st.text(alphabet="0123456789-:T.Z+ ", max_size=27),
)


@settings(max_examples=1500, deadline=None)
@given(ts_texts)
def test_fast_ts_equals_reference(text: str) -> None:
    fast = fast_ts(text, parse_ts, MAX_EPOCH_SECONDS)
    if fast is not None:
        assert fast == _reference_ts(text)
        assert repr(fast) == repr(parse_ts(text))


@pytest.mark.parametrize("text", ["2026-11-03T10:20:30Z", "2026-11-03T10:20:30.1Z", "2026-11-03T10:20:30.123Z",
                                  "2026-11-03T10:20:30.123456Z", "1970-01-01T00:00:00Z", "9999-12-30T00:00:00Z"])
def test_fast_ts_takes_the_common_shapes(text: str) -> None:
    assert fast_ts(text, parse_ts, MAX_EPOCH_SECONDS) == parse_ts(text)


@pytest.mark.parametrize("text", ["9999-12-30T00:00:01Z", "2026-11-03T24:00:00Z", "2026-02-30T10:00:00Z",
                                  "2026-11-03T10:60:00Z", "2026-11-03T10:00:60Z", "2026-11-03 10:00:00Z",
                                  "2026-11-03T10:00:00.1234567Z", "2026-11-03T10:00:00.Z", "2026-11-03T10:00:00+00:00",
                                  "2026-11-03T10:00:00z", "٢٠٢٦-11-03T10:00:00Z"])
def test_fast_ts_leaves_the_rest_to_the_reference(text: str) -> None:
    assert fast_ts(text, parse_ts, MAX_EPOCH_SECONDS) is None


SHAPE_KEYS = [  # each shape's keys; a block mixes a few of one shape with, sometimes, a stray other key
    ["prompt_tokens", "completion_tokens", "total_tokens", "prompt_cache_hit_tokens", "prompt_cache_miss_tokens"],
    ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"],
    ["promptTokenCount", "cachedContentTokenCount", "candidatesTokenCount", "thoughtsTokenCount"],
    ["inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens"],
]
ALL_KEYS = [key for keys in SHAPE_KEYS for key in keys]


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` nine times in ten: blocks with several keys should often be valid (the fast path's case)."""
    return st.integers(0, 9).flatmap(lambda n: bad if n == 9 else good)


small_counts = mostly(st.one_of(st.integers(0, 40), st.none()), st.sampled_from([-1, True, 1.0, "3", 2**53]))
details = st.fixed_dictionaries({}, optional={
    "cached_tokens": small_counts, "cache_write_tokens": small_counts, "cache_creation_tokens": small_counts})
details = mostly(details, st.one_of(st.none(), st.integers()))
splits = st.fixed_dictionaries({}, optional={
    "ephemeral_5m_input_tokens": small_counts, "ephemeral_1h_input_tokens": small_counts})
splits = mostly(splits, st.one_of(st.none(), st.lists(st.integers(), max_size=1)))
nested = st.fixed_dictionaries({}, optional={
    "prompt_tokens_details": details, "input_tokens_details": details,
    "output_tokens_details": st.one_of(st.none(), st.integers(), details), "cache_creation": splits})
any_usage = st.builds(
    lambda own, stray, inner: {**stray, **own, **inner},
    st.sampled_from(SHAPE_KEYS).flatmap(lambda keys: st.dictionaries(st.sampled_from(keys), small_counts)),
    st.dictionaries(st.sampled_from(ALL_KEYS), small_counts, max_size=1),
    nested,
)


def _reference_usage(block: dict[str, Any]) -> Usage | str | None:
    try:
        return normalise_usage(block)
    except UsageError as exc:
        return exc.reason


@settings(max_examples=3000, deadline=None)
@given(any_usage)
def test_fast_usage_equals_reference(block: dict[str, Any]) -> None:
    reference = _reference_usage(block)
    try:
        typed = msgspec.json.decode(json.dumps(block), type=_Usage)
    except msgspec.ValidationError:
        return  # the line takes the reference path
    try:
        fast = fast_usage(typed)
    except _Unusual:
        assert isinstance(reference, str), "the fast path refused a block the reference counts"
        return
    assert fast == reference


@settings(max_examples=1500, deadline=None)
@given(records, any_usage)
def test_fast_path_equals_reference_with_any_usage(obj: dict[str, Any], block: dict[str, Any]) -> None:
    line = json.dumps({**obj, "usage": block}).encode()
    fast = fast_parse(line, Record, parse_ts, MAX_EPOCH_SECONDS)
    if fast is not None:
        assert fast == parse_object(orjson.loads(line))


def test_fast_path_takes_every_bench_line_shape() -> None:
    """Each usage shape of the benchmark, with ms and µs timestamps, is taken by the fast path (and equal)."""
    blocks = [
        {"prompt_tokens": 30, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 10}},
        {"prompt_tokens": 30, "prompt_cache_hit_tokens": 10, "prompt_cache_miss_tokens": 20},
        {"input_tokens": 5, "cache_read_input_tokens": 6, "cache_creation_input_tokens": 7, "output_tokens": 1},
        {"input_tokens": 5, "cache_creation_input_tokens": 7, "cache_creation": {"ephemeral_5m_input_tokens": 3,
                                                                                  "ephemeral_1h_input_tokens": 4}},
        {"input_tokens": 9, "input_tokens_details": {"cached_tokens": 4}, "output_tokens": 2},
        {"promptTokenCount": 9, "cachedContentTokenCount": 4, "candidatesTokenCount": 2, "thoughtsTokenCount": 1},
        {"inputTokens": 9, "cacheReadInputTokens": 4, "cacheWriteInputTokens": 1, "outputTokens": 2},
        {"foo": 1},
    ]
    for index, block in enumerate(blocks):
        for ts in ("2026-11-03T10:00:00Z", "2026-11-03T10:00:00.250Z", "2026-11-03T10:00:00.123456Z", 1793700000):
            line = orjson.dumps({"ts": ts, "request_id": f"r{index}", "model": "m", "tokens_before": 10,
                                 "tokens_after": 4, "usage": block})
            fast = fast_parse(line, Record, parse_ts, MAX_EPOCH_SECONDS)
            assert fast is not None, (block, ts)
            assert fast == parse_object(orjson.loads(line))
    assert fast.flags == ("unknown_usage_shape",)
