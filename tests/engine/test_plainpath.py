"""The plain line's loop (engine.plainpath) counts exactly what the reference parser and ``apply`` count.

Generated logs - mostly plain lines, with duplicates, month and price-version
boundaries, future and expired timestamps, implausible counts, folded labels,
prompt-tier models and every rare key mixed in - are fed to one pipeline
through the canonical path (the plain loop, then ``count_record``) and to
another through the reference parser; every aggregate (in dict order),
rejection, label overflow and ledger size must be the same.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.engine import plainpath
from exporter.engine.dedupe import DedupeLedger
from exporter.engine.fastparse import _minute_starts, fast_ts
from exporter.engine.labels import LabelCaps
from exporter.engine.pipeline import Pipeline
from exporter.engine.records import MAX_EPOCH_SECONDS, parse_line_reference, parse_ts
from exporter.prices.table import PriceTable, load_price_table, parse_price_table
from tests.engine.test_tiered_pricing import TABLE as TIERED_TABLE

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

WALL = 1_793_493_000.0  # 2026-11-01T00:30:00Z
TABLES: dict[str, PriceTable] = {
    "two versions": load_price_table(FIXTURES / "engine" / "prices_two_versions.yaml"),
    "prompt tiers": parse_price_table(TIERED_TABLE, "t.yaml"),
}
MODELS = ["alpha", "beta", "gamma", "delta", "epsilon", "acme/alpha", "zeta", "mystery", "gemini-2.5-pro",
          "gpt-4o", "m1", "m2", "m3"]

counts = st.one_of(*[st.integers(0, 3000)] * 4, st.sampled_from([20_000_000, 300_000, -1, 2.5]))
MINUTES = [f"2026-{day}T{hour}:{minute:02d}:" for day in ("10-31", "11-01", "10-15") for hour in ("00", "23")
           for minute in (0, 1, 14, 15, 44, 45, 59)]
timestamps = st.one_of(
    *[st.builds(lambda minute, s: f"{minute}{s:02d}Z", st.sampled_from(MINUTES), st.integers(0, 59))] * 6,
    st.sampled_from(["2099-01-01T00:00:00Z", "2026-11-01T00:00:00.5Z", "2026-11-01T00:00:61Z",
                     "2026-11-01T00:00:00+01:00", "2026-11-01 00:00:00Z", "2025-07-01T12:00:00Z",
                     "9999-12-31T23:59:59Z"]),
    st.integers(1_790_000_000, 1_793_500_000),
)
labels = st.one_of(st.none(), *[st.sampled_from(["acme", "vendor", "t1", "t2", "t3"])] * 4, st.just(""),
                   st.integers(0, 3))
usage_blocks = st.one_of(
    st.none(),
    st.builds(lambda a, b, c: {"prompt_tokens": a + b, "completion_tokens": c, "total_tokens": a + b + c,
                               "prompt_tokens_details": {"cached_tokens": b}}, counts, counts, counts),
    st.builds(lambda a, b, c, d: {"input_tokens": a, "cache_read_input_tokens": b,
                                  "cache_creation_input_tokens": d, "output_tokens": c}, counts, counts, counts,
              counts),
    st.builds(lambda a, b, c: {"promptTokenCount": a + b, "cachedContentTokenCount": b, "candidatesTokenCount": c},
              counts, counts, counts),
    st.builds(lambda a, c: {"inputTokens": a, "outputTokens": c}, counts, counts),
    st.just({"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": 9}}),  # contradictory
    st.just({"mystery": 3}),  # an unknown shape
)
rare = st.fixed_dictionaries({}, optional={
    "components": st.lists(st.fixed_dictionaries({"name": st.sampled_from(["a", "b"]), "tokens_saved": counts}),
                           max_size=2),
    "response_cache": st.sampled_from(["exact", "semantic", "nope"]),
    "requested_model": st.sampled_from(["alpha", "gpt-4o", ""]),
    "service_tier": st.sampled_from(["batch", "flex", ""]),
    "text_before": st.just("some prompt"),
    "source_flags": st.just(["usage_no_cache_ttl"]),
    "source_dialect": st.just("x"),
    "optimizer": st.just({"model": "alpha", "usage": {"input_tokens": 3, "output_tokens": 1}}),
})
plain_keys = st.fixed_dictionaries(
    {"ts": timestamps, "model": st.sampled_from(MODELS),
     "request_id": st.one_of(st.sampled_from([f"r{n}" for n in range(12)]), st.sampled_from(["", 3, None]))},
    optional={
        "provider": labels,
        "tenant": labels,
        "would_have_saved": counts,
        "count_method": st.sampled_from(["provider", "provider", "tiktoken:o200k_base", "estimate:chars/4", "x1", "x2",
                                         ""]),
        "usage": usage_blocks,
    },
)
savings = st.one_of(st.builds(lambda b, a: {"tokens_before": b, "tokens_after": a}, counts, counts),
                    st.builds(lambda b, a: {"tokens_before": b + a, "tokens_after": a}, counts, counts),
                    st.fixed_dictionaries({}, optional={"tokens_before": counts, "tokens_after": counts}))
plain = st.builds(lambda keys, saved: {**keys, **saved}, plain_keys, savings)
lines = st.lists(st.one_of(
    plain.map(lambda obj: json.dumps(obj, separators=(",", ":")).encode()),
    plain.map(lambda obj: json.dumps(obj, separators=(",", ":")).encode()),
    plain.map(lambda obj: json.dumps(obj, separators=(",", ":")).encode()),
    st.builds(lambda obj, extra: json.dumps({**obj, **extra}).encode(), plain, rare),
    st.sampled_from([b"", b"{", b"[]", b'{"ts":"2026-11-01T00:00:00Z"}', b'{"model":"\xff"}',
                     b'{"ts":"2026-11-01T00:00:00Z","model":"alpha","x":"\xc3\xa9"}']),
), min_size=5, max_size=80)


def _seen_minutes() -> None:
    """The plain loop takes a minute it has seen (fastparse's cache): make every generated minute one."""
    for minute in MINUTES:
        fast_ts(minute + "00Z", parse_ts, MAX_EPOCH_SECONDS)


# Each test runs the C loop (_plain.c) and the Python loop; without the C module only the Python one.
LOOPS = [True, False] if plainpath._native is not None else [False]


@contextmanager
def loop(native: bool) -> Iterator[None]:
    """``ingest_canonical`` with the C loop (``native``) or the Python one."""
    before = plainpath.NATIVE
    plainpath.NATIVE = native
    try:
        yield
    finally:
        plainpath.NATIVE = before


def _pipeline(table: PriceTable, oldest_month: str | None, window_days: float, stable: bool = True) -> Pipeline:
    return Pipeline(table, caps=LabelCaps(max_models=4, max_tenants=2, max_methods=2),
                    ledger=DedupeLedger(window_days, stable=stable), oldest_month=oldest_month,
                    wall_clock=lambda: WALL)


def _state(pipeline: Pipeline) -> Any:
    caps = [(cap.name, cap.overflow, sorted(cap.values)) for cap in pipeline.caps.all()]
    return (pipeline.aggregates.to_state(), pipeline.rejections, pipeline.last_rejection, caps, len(pipeline.ledger),
            pipeline.aggregates.newest_ts)


@pytest.mark.parametrize("native", LOOPS)
@settings(max_examples=400, deadline=None)
@given(lines, st.sampled_from(sorted(TABLES)), st.sampled_from([None, "2026-11"]), st.sampled_from([40.0, 0.02]),
       st.integers(1, 7), st.booleans())
def test_the_plain_loop_counts_what_the_reference_counts(native: bool, log: list[bytes], table: str,
                                                         oldest_month: str | None, window_days: float, batch: int,
                                                         stable: bool) -> None:
    _seen_minutes()
    fast = _pipeline(TABLES[table], oldest_month, window_days, stable)
    reference = _pipeline(TABLES[table], oldest_month, window_days, stable)
    with loop(native):
        for start in range(0, len(log), batch):  # the loop binds caches per batch: several batches
            fast.ingest_lines(log[start:start + batch])
    reference.ingest_lines(log, decoder=lambda line: parse_line_reference(line, None))
    assert _state(fast) == _state(reference)


@pytest.mark.parametrize("native", LOOPS)
def test_plain_lines_are_counted_in_full(native: bool) -> None:
    """A hand-checked log: two plain records, a duplicate, and a rare-key line, through the canonical path."""
    pipeline = _pipeline(TABLES["two versions"], None, 40.0)
    line = {"ts": "2026-11-01T00:01:02Z", "request_id": "a", "model": "alpha", "tokens_before": 100,
            "tokens_after": 60, "usage": {"input_tokens": 60, "output_tokens": 5}}
    with loop(native):
        pipeline.ingest_lines([json.dumps(line).encode(), json.dumps(line).encode(),
                               json.dumps({**line, "request_id": "b", "tokens_after": 100}).encode(),
                               json.dumps({**line, "request_id": "c", "response_cache": "exact"}).encode()])
    totals = pipeline.aggregates.month_totals()["2026-11"]
    assert (totals["requests"], totals["tokens_saved"], totals["duplicates"]) == (2, 40, 1)


def _random_log(rng: random.Random, size: int) -> list[bytes]:
    """Mostly plain lines (the kind the loop counts), with every kind of exception to it mixed in."""
    log = []
    for _ in range(size):
        obj: dict[str, Any] = {"ts": rng.choice(MINUTES) + f"{rng.randrange(60):02d}Z",
                               "request_id": f"r{rng.randrange(400)}", "model": rng.choice(MODELS)}
        for key, values in (("provider", ["acme", "vendor", None, "", 7]), ("tenant", ["t1", "t2", "t3", None]),
                            ("count_method", ["provider", "tiktoken:o200k_base", "estimate:chars/4", "x1", "x2"])):
            if rng.random() < 0.8:
                obj[key] = rng.choice(values)
        if rng.random() < 0.8:
            after = rng.randrange(3000)
            obj["tokens_before"], obj["tokens_after"] = after + rng.choice([0, rng.randrange(3000)]), after
        if rng.random() < 0.2:
            obj["would_have_saved"] = rng.randrange(3000)
        if rng.random() < 0.8:
            a, b, c = rng.randrange(5000), rng.randrange(5000), rng.randrange(5000)
            obj["usage"] = rng.choice([
                {"prompt_tokens": a + b, "completion_tokens": c, "prompt_tokens_details": {"cached_tokens": b}},
                {"input_tokens": a, "cache_read_input_tokens": b, "cache_creation_input_tokens": c,
                 "output_tokens": c},
                {"promptTokenCount": a + b, "cachedContentTokenCount": b, "candidatesTokenCount": c},
                {"inputTokens": a, "outputTokens": c, "cacheReadInputTokens": b},
            ])
        unusual = rng.random()
        if unusual < 0.02:
            obj["tokens_after"] = 20_000_000  # implausible
        elif unusual < 0.04:
            obj["ts"] = "2099-01-01T00:00:00Z"  # future
        elif unusual < 0.06:
            obj["ts"] = rng.randrange(1_790_000_000, 1_793_500_000)
        elif unusual < 0.08:
            obj["response_cache"] = "exact"
        elif unusual < 0.10:
            obj["requested_model"] = "gpt-4o"
        elif unusual < 0.12:
            obj["service_tier"] = "batch"
        elif unusual < 0.14:
            obj["components"] = [{"name": "a", "tokens_saved": 5}]
        elif unusual < 0.15:
            del obj["request_id"]
        log.append(json.dumps(obj, separators=(",", ":")).encode())
    return log


@pytest.mark.parametrize("native", LOOPS)
@pytest.mark.parametrize("stable", [True, False])
@pytest.mark.parametrize("table", sorted(TABLES))
@pytest.mark.parametrize("seed", range(4))
def test_long_plain_logs_count_alike(native: bool, stable: bool, table: str, seed: int) -> None:
    """Thousands of mostly plain lines in batches of random size: the loop's caches across batches."""
    _seen_minutes()
    rng = random.Random(seed)
    log = _random_log(rng, 3000)
    oldest, window = rng.choice([None, "2026-11"]), rng.choice([40.0, 0.02])
    fast = _pipeline(TABLES[table], oldest, window, stable)
    reference = _pipeline(TABLES[table], oldest, window, stable)
    start = 0
    with loop(native):
        while start < len(log):
            size = rng.randrange(1, 400)
            fast.ingest_lines(log[start:start + size])
            start += size
    reference.ingest_lines(log, decoder=lambda line: parse_line_reference(line, None))
    assert _state(fast) == _state(reference)
    assert fast.aggregates.divergence and fast.aggregates.duplicates  # the log reached those counts


@pytest.mark.parametrize("native", LOOPS)
@pytest.mark.parametrize("seed", range(2))
def test_minutes_not_seen_before_count_alike(native: bool, seed: int) -> None:
    """With fastparse's minute cache empty, the loop finds each new minute itself (invalid ones go on as before)."""
    rng = random.Random(seed)
    log = _random_log(rng, 1500)
    for index in range(0, len(log), 50):  # minutes that are no minute: the general path names the rejection
        log.insert(index, json.dumps({"ts": rng.choice(["2026-13-01T00:00:00Z", "2026-11-01T24:00:00Z",
                                                        "2026-11-31T00:00:00Z", "2026-11-01T00:60:00Z"]),
                                      "request_id": f"bad{index}", "model": "alpha"}).encode())
    fast = _pipeline(TABLES["two versions"], None, 40.0)
    reference = _pipeline(TABLES["two versions"], None, 40.0)
    _minute_starts.clear()
    with loop(native):
        fast.ingest_lines(log)
    reference.ingest_lines(log, decoder=lambda line: parse_line_reference(line, None))
    assert _state(fast) == _state(reference)
    assert fast.rejections >= len(log) // 51


@pytest.mark.parametrize("native", LOOPS)
def test_a_new_minute_stays_in_the_plain_loop(native: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain line whose minute fastparse has never seen is counted by the loop, not sent to fast_record."""
    _minute_starts.clear()

    def general_path(*_args: object) -> None:
        raise AssertionError("the plain line left the loop")

    monkeypatch.setattr(plainpath, "fast_record", general_path)
    monkeypatch.setattr(plainpath, "NATIVE", native)
    pipeline = _pipeline(TABLES["two versions"], None, 40.0)
    pipeline.ingest_lines([json.dumps({"ts": f"2026-11-01T00:{minute:02d}:07Z", "request_id": f"m{minute}",
                                       "model": "alpha", "tokens_before": 10, "tokens_after": 4}).encode()
                           for minute in range(30)])
    totals = pipeline.aggregates.month_totals()["2026-11"]
    assert (totals["requests"], totals["tokens_saved"]) == (30, 180)
