"""The backfill writer: valid OpenMetrics, monotone counters, the last step equal to replay and /metrics.

Logs are generated across a month boundary (October into November 2026), in
an order a gateway could write them (a few records late), with duplicates,
rejects and an unpriced model; the clock is fixed at 1 December 2026.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections import defaultdict
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from exporter import catalog
from exporter.exposition.render import Exposition
from exporter.prices.table import load_price_table
from exporter.replay.backfill import BackfillSummary, backfill, reserved_labels
from exporter.replay.replay import replay_files, replay_json, replay_pipeline
from exporter.replay.steps import parse_labels
from exporter.sources.formats.registry import make_line_decoder
from tests.support.prices import one_version

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC).timestamp()
START = datetime(2026, 10, 30, tzinfo=UTC).timestamp()
NOVEMBER = datetime(2026, 11, 1, tzinfo=UTC).timestamp()
DECEMBER = datetime(2026, 12, 1, tzinfo=UTC).timestamp()
MONTH_FAMILIES = {spec.name for spec in catalog.CATALOG if spec.labels and spec.labels[0] == catalog.MONTH}
LABELS = parse_labels(["job=llm-savings-exporter"], reserved_labels())

SeriesId = tuple[str, tuple[tuple[str, str], ...]]


def make_log(seed: int, count: int, span_hours: float, late_share: float) -> list[bytes]:
    """Records ``span_hours`` from START on, some written late, some twice, some bad."""
    rng = random.Random(seed)
    lines: list[bytes] = []
    ts = START
    for i in range(count):
        ts += rng.uniform(0, span_hours * 3600 / max(count, 1) * 2)
        stamp = ts - rng.uniform(0, 7200) if rng.random() < late_share else ts
        after = rng.randint(10, 5000)
        record: dict[str, Any] = {
            "ts": datetime.fromtimestamp(stamp, UTC).isoformat(),
            "request_id": f"r{i}",
            "model": rng.choice(["gpt-4o", "gpt-4o", "unknown-model"]),
            "tenant": rng.choice(["a", "b"]),
            "tokens_before": after + rng.randint(0, 900),
            "tokens_after": after,
            "count_method": rng.choice(["provider", "tiktoken:o200k_base"]),
            "usage": {"prompt_tokens": after, "completion_tokens": rng.randint(1, 300),
                      "prompt_tokens_details": {"cached_tokens": rng.choice([0, after // 2])}},
        }
        if rng.random() < 0.2:
            record["would_have_saved"] = rng.randint(1, 400)
        lines.append(json.dumps(record).encode())
        if rng.random() < 0.1:
            lines.append(lines[-1])  # logged twice: a duplicate
        if rng.random() < 0.03:
            lines.append(b"not json")
    return lines


def run_backfill(tmp: Path, lines: list[bytes], step: float, until: float | None = None
                 ) -> tuple[BackfillSummary, str, Path]:
    log = tmp / "gateway.jsonl"
    log.write_bytes(b"\n".join(lines) + b"\n")
    prices = tmp / "prices.yaml"
    prices.write_text(one_version("v1"), encoding="utf-8")
    out = tmp / "backfill.om"
    summary = backfill([str(log)], load_price_table(str(prices)), make_line_decoder("canonical"), str(out),
                       step=step, labels=LABELS, until=until, wall_clock=lambda: NOW)
    return summary, out.read_text(encoding="utf-8") if out.exists() else "", log


def parsed_totals(text: str) -> dict[SeriesId, list[tuple[float, float]]]:
    """Every ``_total`` series of the file: (timestamp, value) in file order. Parsing checks the syntax."""
    series: dict[SeriesId, list[tuple[float, float]]] = defaultdict(list)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.endswith("_total"):
                assert sample.timestamp is not None
                key = (sample.name, tuple(sorted(sample.labels.items())))
                series[key].append((float(sample.timestamp), float(sample.value)))
    return series


def live_view(log: Path, prices_path: Path) -> tuple[dict[SeriesId, float], dict[str, Any]]:
    """What /metrics (OpenMetrics) shows after a replay of the log, month families only, and replay --json."""
    prices = load_price_table(str(prices_path))
    decoder = make_line_decoder("canonical")
    pipeline = replay_pipeline(prices, decoder)
    replay_files([str(log)], pipeline, decoder.decode_line)
    text = Exposition(pipeline.month_of.start).render(pipeline.aggregates, [], openmetrics=True).decode()
    view = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in MONTH_FAMILIES:
                labels = {**sample.labels, **dict(LABELS)}
                view[(sample.name, tuple(sorted(labels.items())))] = float(sample.value)
    return view, replay_json(pipeline)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), count=st.integers(1, 120), span_hours=st.sampled_from([3.0, 30.0, 80.0]),
       late_share=st.sampled_from([0.0, 0.1, 0.5]), step=st.sampled_from([3600.0, 5400.0, 21600.0]))
def test_counters_are_monotone_and_end_at_replay(seed: int, count: int, span_hours: float, late_share: float,
                                                 step: float) -> None:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        lines = make_log(seed, count, span_hours, late_share)
        summary, text, log = run_backfill(tmp, lines, step)
        assert text.endswith("# EOF\n") and text.count("# EOF") == 1
        assert summary.first_step is not None and summary.last_step is not None
        series = parsed_totals(text)
        assert len(series) == summary.series
        steps = sorted({ts for points in series.values() for ts, _ in points})
        dated = [datetime.fromisoformat(json.loads(line)["ts"]).timestamp() for line in lines if line.startswith(b"{")]
        # until: the start of the month after the newest record
        assert steps[0] == summary.first_step and steps[-1] == summary.last_step == (
            DECEMBER if max(dated) >= NOVEMBER else NOVEMBER)
        assert len(steps) == summary.steps
        for key, points in series.items():
            stamps = [ts for ts, _ in points]
            assert stamps == sorted(set(stamps)), key  # strictly increasing
            values = [value for _, value in points]
            assert all(a <= b for a, b in pairwise(values)), key  # a counter
            assert stamps[-1] == summary.last_step  # every series goes on to the last step
            assert stamps == steps[steps.index(stamps[0]):]  # and is sampled at every step from its first
            assert dict(key[1])["backfill"] == "true" and dict(key[1])["job"] == "llm-savings-exporter"
        # November starts on a step whatever the step: October's final value is read there
        if any(dict(k[1]).get("month") == "2026-10" for k in series) and steps[-1] > NOVEMBER:
            assert NOVEMBER in steps
        assert dated[0] < summary.first_step <= dated[0] + step  # the step after the first record read
        live, replayed = live_view(log, tmp / "prices.yaml")
        last = {key: points[-1][1] for key, points in series.items()}
        assert last == pytest.approx(live, rel=1e-12, abs=1e-12)
        assert set(last) == set(live)
        by_month: dict[str, float] = defaultdict(float)
        for (name, labels), value in last.items():
            if name == catalog.REQUESTS_TOTAL.name:
                by_month[dict(labels)["month"]] += value
        assert dict(by_month) == {m: t["requests"] for m, t in replayed["months"].items() if t["requests"]}


def test_a_step_holds_the_records_logged_before_it(tmp_path: Path) -> None:
    """In a log written in time order, the requests at step t are the distinct records dated before t."""
    lines = make_log(3, 400, 60.0, late_share=0.0)
    until = datetime(2026, 11, 4, tzinfo=UTC).timestamp()  # after every record (they span about 60 hours)
    summary, text, _log = run_backfill(tmp_path, lines, 3600.0, until=until)
    assert summary.after_until == 0
    stamps = {}
    for line in lines:
        if line.startswith(b"{"):
            record = json.loads(line)
            stamps.setdefault(record["request_id"], datetime.fromisoformat(record["ts"]).timestamp())
    at_step: dict[float, float] = defaultdict(float)
    for (name, _labels), points in parsed_totals(text).items():
        if name == catalog.REQUESTS_TOTAL.name:
            for ts, value in points:
                at_step[ts] += value
    assert len(at_step) > 50
    for ts, total in at_step.items():
        assert total == sum(1 for stamp in stamps.values() if stamp < ts), ts


def test_until_ends_the_series_and_leaves_later_records_out(tmp_path: Path) -> None:
    lines = make_log(5, 300, 60.0, late_share=0.0)
    until = datetime(2026, 10, 31, 6, 30, tzinfo=UTC).timestamp()
    summary, text, _log = run_backfill(tmp_path, lines, 3600.0, until=until)
    later = sum(1 for line in lines if line.startswith(b"{")
                and datetime.fromisoformat(json.loads(line)["ts"]).timestamp() >= until)
    assert later > 0 and summary.after_until == later
    series = parsed_totals(text)
    assert max(ts for points in series.values() for ts, _ in points) == until == summary.last_step
    requests = sum(points[-1][1] for (name, _), points in series.items() if name == catalog.REQUESTS_TOTAL.name)
    assert requests == len({json.loads(line)["request_id"] for line in lines if line.startswith(b"{")
                            and datetime.fromisoformat(json.loads(line)["ts"]).timestamp() < until})


def test_no_dated_record_writes_nothing(tmp_path: Path) -> None:
    summary, text, _log = run_backfill(tmp_path, [b"not json", b"", b'{"model": "gpt-4o"}'], 3600.0)
    assert summary.steps == 0 and summary.first_step is None and text == ""
    assert not (tmp_path / "backfill.om").exists()


def test_records_dated_ahead_of_the_clock_do_not_move_it(tmp_path: Path) -> None:
    lines = make_log(9, 20, 3.0, late_share=0.0)
    lines.insert(5, json.dumps({"ts": NOW + 86400 * 30, "request_id": "future", "model": "gpt-4o"}).encode())
    summary, text, _log = run_backfill(tmp_path, lines, 3600.0)
    assert summary.last_step == NOVEMBER  # the end of October, not January where the future record is dated
    rejected = [points for (name, labels), points in parsed_totals(text).items()
                if name == catalog.RECORDS_REJECTED_TOTAL.name and dict(labels)["reason"] == "future_ts"]
    assert rejected and rejected[0][-1][1] == 1


def test_hostile_lines_are_rejected_not_a_crash(tmp_path: Path) -> None:
    """Deep nesting (msgspec's RecursionError), NUL bytes and overlong lines: counted rejects."""
    lines = make_log(11, 10, 3.0, late_share=0.0)
    lines[3:3] = [b"[" * 200_000 + b"]" * 200_000, b'{"ts": 1\x00}', b"x" * (2 << 20)]
    summary, text, _log = run_backfill(tmp_path, lines, 3600.0)
    reasons = {dict(labels)["reason"]: points[-1][1] for (name, labels), points in parsed_totals(text).items()
               if name == catalog.RECORDS_REJECTED_TOTAL.name}
    assert reasons == {"invalid_json": 1, "nul_bytes": 1, "line_too_long": 1}
    assert summary.lines == len(lines)
