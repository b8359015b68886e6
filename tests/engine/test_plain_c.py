"""The plain line's loop in C (engine/_plain.c) leaves what its Python twin leaves, ledger included.

test_plainpath.py holds both loops to the reference parser's aggregates; here the two loops are held
to each other on everything they touch: every aggregate in dict order, the rejections, the dedupe
ledger's own parts (its shards, hour buckets, count and evictions: the C loop works on them itself
when the ledger is replay's), and what is counted when the Python code it hands a line to raises.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from exporter.engine import plainpath
from exporter.engine.dedupe import DedupeLedger
from exporter.engine.fastparse import _minute_starts
from exporter.engine.labels import LabelCaps
from exporter.engine.pipeline import Pipeline
from exporter.engine.records import parse_ts
from exporter.sidecar.sources import _Watch  # the sidecar's own, with its Python follow
from tests.engine.test_plainpath import MINUTES, TABLES, WALL, _random_log, _seen_minutes, loop

pytestmark = pytest.mark.skipif(plainpath._native is None, reason="the C loop is not built (no compiler)")


def _pipeline(table: str, oldest: str | None, window: float, max_ids: int, stable: bool,
              caps: LabelCaps | None = None) -> Pipeline:
    return Pipeline(TABLES[table], caps=caps or LabelCaps(max_models=4, max_tenants=2, max_methods=2),
                    ledger=DedupeLedger(window, max_ids, stable=stable), oldest_month=oldest, wall_clock=lambda: WALL)


def _routine_log(rng: random.Random, size: int) -> list[bytes]:
    """A gateway's day: a few routes, ids unique but for re-sends, nearly every line plain (the C loop's
    own), one in fifty not."""
    log = _random_log(rng, size)
    for index in range(size):
        if rng.random() < 0.98:
            obj = json.loads(log[index])
            for key in ("response_cache", "requested_model", "service_tier", "components"):
                obj.pop(key, None)
            obj["model"] = rng.choice(["alpha", "beta", "gamma"])
            obj["tenant"] = rng.choice(["t1", "t2"])
            obj["count_method"] = rng.choice(["provider", "tiktoken:o200k_base"])
            obj["provider"] = "acme"
            obj["ts"] = rng.choice(PAST_MINUTES) + f"{rng.randrange(60):02d}Z"
            obj["request_id"] = f"q{index % 3900}"  # unique but for a hundred re-sent
            log[index] = json.dumps(obj, separators=(",", ":")).encode()
    return log


PAST_MINUTES = [minute for minute in MINUTES if minute < "2026-11-01T00:30"]  # before WALL: none in the future


@contextmanager
def counted_fallbacks() -> Iterator[list[int]]:
    """How many lines the C loop hands to the Python loop, while inside."""
    handed = [0]

    def fallback(pipeline: Pipeline, lines: Iterable[bytes]) -> None:
        handed[0] += 1
        plainpath.ingest_python(pipeline, lines)

    plainpath.setup_c(fallback)
    try:
        yield handed
    finally:
        plainpath.setup_c(plainpath.ingest_python)


def _everything(pipeline: Pipeline) -> Any:
    agg, ledger = pipeline.aggregates, pipeline.ledger
    maps = {name: list(getattr(agg, name).items()) for name in
            ("cells", "duplicates", "unpriced", "components", "divergence", "flagged")}
    return (maps, agg.to_state(), agg.newest_ts, pipeline.rejections, pipeline.last_rejection,
            [(cap.name, cap.overflow, sorted(cap.values)) for cap in pipeline.caps.all()],
            (ledger._count, ledger.evicted, [bytes(s) if s is not None else None for s in ledger._shards],
             list(ledger._buckets.items()), ledger._newest_bucket, ledger._current_start, ledger._current_end))


def _both(lines_in_batches: list[list[bytes]], **options: Any) -> tuple[Any, Any]:
    states = []
    for native in (True, False):
        pipeline = _pipeline(**options)
        with loop(native):
            for batch in lines_in_batches:
                pipeline.ingest_lines(batch)
        states.append(_everything(pipeline))
    return states[0], states[1]


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("max_ids", [40, 1_000_000])
@pytest.mark.parametrize("seed", range(3))
def test_the_two_loops_leave_the_same_state(stable: bool, max_ids: int, seed: int) -> None:
    """Random logs in random batches, a ledger small enough to evict and a window short enough to expire."""
    _seen_minutes()
    rng = random.Random(seed)
    log = _random_log(rng, 2500)
    batches, start = [], 0
    while start < len(log):
        size = rng.randrange(1, 300)
        batches.append(log[start:start + size])
        start += size
    table, oldest, window = rng.choice(sorted(TABLES)), rng.choice([None, "2026-11"]), rng.choice([40.0, 0.02])
    c_state, python_state = _both(batches, table=table, oldest=oldest, window=window, max_ids=max_ids, stable=stable)
    assert c_state == python_state
    assert c_state[2] > 0 and c_state[6][0] > 0  # the log counted records and filled the ledger


def test_any_iterable_of_lines() -> None:
    """A generator, a tuple, and lines that are bytearrays (the C loop hands them to Python) count alike."""
    _seen_minutes()
    log = _random_log(random.Random(7), 300)
    odd = [bytearray(line) if index % 5 == 0 else line for index, line in enumerate(log)]

    def generator(lines: list[Any]) -> Iterable[Any]:
        yield from lines
    for form in (tuple, generator):
        states = []
        for native in (True, False):
            pipeline = _pipeline("two versions", None, 40.0, 1_000_000, False)
            with loop(native):
                pipeline.ingest_lines(form(odd))
            states.append(_everything(pipeline))
        assert states[0] == states[1]
        assert states[0][2] > 0


@pytest.mark.parametrize("stable", [False, True])
def test_what_was_counted_stays_when_the_python_loop_raises(stable: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line the Python loop takes raises: the lines before it are counted as the Python loop counts them."""
    _seen_minutes()
    log = _random_log(random.Random(3), 400)
    bad = json.dumps({"ts": "2026-11-01T00:00:01Z", "request_id": "boom", "model": "alpha",
                      "response_cache": "exact"}).encode()  # a rare key: always the Python loop's
    log.insert(250, bad)

    def fails(raw: Any, line: bytes, *_args: Any) -> Any:
        if line == bad:
            raise RuntimeError("the general path failed")
        return real(raw, line, *_args)
    real = plainpath.fast_record
    monkeypatch.setattr(plainpath, "fast_record", fails)
    states = []
    for native in (True, False):
        pipeline = _pipeline("two versions", None, 40.0, 1_000_000, stable)
        with loop(native), pytest.raises(RuntimeError, match="general path failed"):
            pipeline.ingest_lines(log)
        states.append(_everything(pipeline))
    assert states[0] == states[1]
    assert states[0][2] > 0


# the edges weighted up: month ends (February of leap and common years), 1969/1970, the last valid day
minutes = st.builds(lambda y, mo, d, h, mi: f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:",
                    st.one_of(st.integers(1960, 2100), st.sampled_from([1969, 1970, 1900, 2000, 2100, 2400, 9999, 1]),
                              st.integers(1, 9999)),
                    st.one_of(st.sampled_from([2, 2, 12, 1]), st.integers(0, 13)),
                    st.one_of(st.sampled_from([28, 29, 30, 31, 1]), st.integers(0, 32)),
                    st.one_of(st.sampled_from([0, 23]), st.integers(0, 24)),
                    st.one_of(st.sampled_from([0, 59]), st.integers(0, 60)))


@settings(max_examples=300, deadline=None)
@given(st.lists(minutes, min_size=1, max_size=30), st.integers(0, 59))
@example(["2025-02-29T00:00:", "2024-02-29T23:59:", "2100-02-29T00:00:", "2000-02-29T00:00:", "1969-12-31T23:59:",
          "1970-01-01T00:00:", "9999-12-30T00:00:", "9999-12-30T00:01:", "2026-04-31T00:00:"], 7)
def test_a_new_minute_is_the_reference_minute(prefixes: list[str], second: int) -> None:
    """The C loop works out a minute it has not seen itself (1970 on); the cache then holds what the reference
    parser gives, and the count is the Python loop's."""
    lines = [json.dumps({"ts": f"{prefix}{second:02d}Z", "request_id": f"r{index}", "model": "alpha",
                         "tokens_before": 10, "tokens_after": 4}).encode() for index, prefix in enumerate(prefixes)]
    states = []
    for native in (True, False):
        _minute_starts.clear()
        pipeline = _pipeline("two versions", None, 40.0, 1_000_000, False)
        with loop(native):
            pipeline.ingest_lines(lines)
        states.append((_everything(pipeline), dict(_minute_starts)))
    assert states[0] == states[1]
    for prefix, start in states[0][1].items():
        assert start == int(parse_ts(prefix + "00Z"))


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.binary(max_size=400), st.sampled_from([bytes(n) for n in (0, 1, 127, 128, 129, 255, 256, 257)])))
@example(b"abc")
def test_the_stable_digest_is_hashlibs_blake2b(data: bytes) -> None:
    """The sidecar's ledger keys ids by 8-byte BLAKE2b; the C loop computes it itself (RFC 7693)."""
    assert plainpath._native.digest8(data) == hashlib.blake2b(data, digest_size=8).digest()


@pytest.mark.parametrize("stable", [True, False])
def test_ids_beyond_ascii_are_keyed_alike(stable: bool) -> None:
    """Ids with non-ASCII characters (and escapes JSON allows) land in the same shard with the same digest."""
    _seen_minutes()
    ids = ["é", "日本語-request", "a\\u00e9b", "\\ud83d\\ude00", "plain", "é", "lone \\ud800 surrogate"]
    lines = [(f'{{"ts":"2026-11-01T00:00:{index:02d}Z","request_id":"{rid}","model":"alpha",'
              f'"tokens_before":10,"tokens_after":4}}').encode() for index, rid in enumerate(ids * 2)]
    c_state, python_state = _both([lines], table="two versions", oldest=None, window=40.0, max_ids=1_000_000,
                                  stable=stable)
    assert c_state == python_state
    assert c_state[6][0] >= 5  # the distinct ids ("é" twice; every line twice: duplicates)


def test_the_sidecar_hears_where_lines_are_rejected_and_where_one_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """ingest_watched: the rejected lines' places and reasons, and the failing line's place, as the Python
    loop over watch.follow gives them; lines before the failing one counted, none after."""
    _seen_minutes()
    log = _random_log(random.Random(11), 200)
    for at in (20, 21, 90):
        log[at] = b'{"request_id": "x", "prompt": "not json'
    boom = json.dumps({"ts": "2026-11-01T00:00:01Z", "request_id": "boom", "model": "alpha",
                       "response_cache": "exact"}).encode()
    log[150] = boom
    real = plainpath.fast_record

    def fails(raw: Any, line: bytes, *args: Any) -> Any:
        if line == boom:
            raise RuntimeError("the general path failed")
        return real(raw, line, *args)
    monkeypatch.setattr(plainpath, "fast_record", fails)
    seen = []
    for native in (True, False):
        pipeline = _pipeline("two versions", None, 40.0, 1_000_000, True)
        watch = _Watch()
        with loop(native), pytest.raises(RuntimeError, match="general path failed"):
            pipeline.ingest_watched(log, 5, watch)
        seen.append((watch.at, watch.rejected, _everything(pipeline)))
    assert seen[0] == seen[1]
    assert seen[0][0] == 150 and {20, 21, 90} <= {at for at, _ in seen[0][1]}
    assert all(at < 150 for at, _ in seen[0][1])


@pytest.mark.parametrize("forget", ["clear", "new dict", "new aggregates"])
def test_routes_forgotten_between_calls_are_not_trusted(forget: str) -> None:
    """The C loop keeps a pipeline's routes across calls; when the pipeline forgets them (its route memory
    full, prices or aggregates changed), the next call looks every route up again."""
    _seen_minutes()
    log = _random_log(random.Random(17), 1200)
    states = []
    for native in (True, False):
        pipeline = _pipeline("two versions", None, 40.0, 1_000_000, False)
        with loop(native):
            for start in range(0, len(log), 300):
                pipeline.ingest_lines(log[start:start + 300])
                if forget == "clear":
                    pipeline._routes.clear()  # as _route does past MAX_ROUTES
                elif forget == "new dict":
                    pipeline._clear_routes(pipeline._aggregates)
                else:
                    kept = pipeline.aggregates
                    pipeline.aggregates = type(kept).from_state(kept.to_state())
        states.append(_everything(pipeline))
    assert states[0] == states[1]


@pytest.mark.parametrize("forget", ["nothing", "clear", "new dict", "new aggregates", "read between"])
@pytest.mark.parametrize("stable", [False, True])
def test_a_routine_log_is_counted_in_c_and_alike(forget: str, stable: bool) -> None:
    """Nearly every line of a routine log is counted by the C loop itself (its route cache and the sums it
    keeps per route), in batches as the sidecar gives them, with what a pipeline does between batches:
    its route memory cleared (past MAX_ROUTES) or remade (prices changed), its aggregates replaced (a
    restore) or read (a scrape). The totals are the Python loop's."""
    _seen_minutes()
    log = _routine_log(random.Random(23), 4000)
    states, handed = [], 0
    for native in (True, False):
        pipeline = _pipeline("two versions", None, 40.0, 1_000_000, stable, caps=LabelCaps())
        with loop(native), counted_fallbacks() as fallbacks:
            for start in range(0, len(log), 600):
                pipeline.ingest_lines(log[start:start + 600])
                if forget == "clear":
                    pipeline._routes.clear()
                elif forget == "new dict":
                    pipeline._clear_routes(pipeline._aggregates)
                elif forget == "new aggregates":
                    kept = pipeline.aggregates
                    pipeline.aggregates = type(kept).from_state(kept.to_state())
                elif forget == "read between":
                    assert pipeline.aggregates.month_totals()
        states.append(_everything(pipeline))
        if native:
            handed = fallbacks[0]
    assert states[0] == states[1]
    assert handed < len(log) * 0.15  # the C loop counted the rest


def test_sums_held_on_routes_reach_aggregates_that_outlive_their_pipeline() -> None:
    """Aggregates taken without the property (no flush) still get every count once the pipeline is gone."""
    _seen_minutes()
    log = _routine_log(random.Random(29), 1500)
    totals = []
    for native in (True, False):
        pipeline = _pipeline("two versions", None, 40.0, 1_000_000, False, caps=LabelCaps())
        with loop(native):
            pipeline.ingest_lines(log)
        held = pipeline._aggregates
        if native:
            assert pipeline._plain_routes.pending  # the batch's sums wait on the routes
        del pipeline
        totals.append(held.to_state())
    assert totals[0] == totals[1]
