"""calibrate's safeguards, one test each: duplicates, cache reads, effective n, interval, tokenizer keys."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.engine.records import Record, parse_object
from exporter.prices.table import load_price_table, parse_price_table
from exporter.report.calibration import Calibration, family_of, placement_of

BUNDLED = load_price_table()
TS = 1764460800  # 2025-11-30, inside the bundled table's versions


def record(i: int, model: str, factor: float, rnd: random.Random, *, noise: float = 0.02,
           **extra: Any) -> dict[str, Any]:
    """A shadow-tested request: both arms billed (no cache reads), counted with o200k_base."""
    before = rnd.randint(2000, 20000)
    after = rnd.randint(500, before - 1)
    f = factor * rnd.uniform(1 - noise, 1 + noise)
    overhead = 350  # template and system prompt: in both arms, so not in the delta
    rec: dict[str, Any] = {
        "ts": TS + i, "request_id": f"r{i}", "model": model, "tokens_before": before, "tokens_after": after,
        "count_method": "tiktoken:o200k_base",
        "usage": {"input_tokens": round(after * f) + overhead, "output_tokens": 40},
        "billed_before": round(before * f) + overhead, "billed_after": round(after * f) + overhead,
    }
    rec.update(extra)
    return rec


def calibrate(records: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
    cal = Calibration(table=BUNDLED, **options)
    for rec in records:
        cal.add_object(rec)
    return cal.report()


def delta_by_tokenizer(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["tokenizer"]: d for d in report["delta_factors"]}


def test_duplicate_request_ids_are_excluded_and_counted_first_wins() -> None:
    rnd = random.Random(1)
    first = [record(i, "claude-sonnet-4-5", 1.2, rnd) for i in range(40)]
    # the same ids again, with numbers that would pull the factor to 3.0
    again = [{**rec, "billed_before": rec["billed_after"] + 3 * (rec["tokens_before"] - rec["tokens_after"])}
             for rec in first[:10]]
    report = calibrate(first + again)
    assert report["records"]["excluded"]["duplicate_request_id"] == 10
    (row,) = report["delta_factors"]
    assert row["n"] == 40
    assert row["factor"] == pytest.approx(1.2, abs=0.01)


def test_records_without_an_id_are_kept_and_counted() -> None:
    rnd = random.Random(2)
    recs = [record(i, "claude-sonnet-4-5", 1.2, rnd) for i in range(5)]
    for rec in recs:
        del rec["request_id"]
    report = calibrate(recs + recs)  # no id: no way to tell a repeat
    assert report["records"]["without_request_id"] == 10
    assert report["records"]["excluded"]["duplicate_request_id"] == 0
    assert report["delta_factors"][0]["n"] == 10


def test_rows_with_cache_reads_are_excluded_and_counted() -> None:
    rnd = random.Random(3)
    clean = [record(i, "claude-sonnet-4-5", 1.2, rnd) for i in range(40)]
    cached = [record(100 + i, "claude-sonnet-4-5", 2.5, rnd,
                     usage={"input_tokens": 100, "cache_read_input_tokens": 5000, "output_tokens": 1})
              for i in range(30)]
    openai_cached = record(200, "gpt-4o", 2.5, rnd, usage={"prompt_tokens": 900, "completion_tokens": 1,
                                                            "prompt_tokens_details": {"cached_tokens": 128}})
    report = calibrate(clean + cached + [openai_cached])
    assert report["records"]["excluded"]["cache_read"] == 31
    assert report["records"]["used_for_delta_factor"] == 40
    assert report["records"]["used_for_level_ratio"] == 40
    (row,) = report["delta_factors"]
    assert row["factor"] == pytest.approx(1.2, abs=0.01)
    # a cache write is not a cache read: kept
    written = record(300, "claude-sonnet-4-5", 1.2, rnd,
                     usage={"input_tokens": 900, "cache_creation_input_tokens": 50, "output_tokens": 1})
    assert calibrate([written])["records"]["excluded"]["cache_read"] == 0


def test_provider_counted_records_are_excluded_and_counted() -> None:
    rnd = random.Random(4)
    rec = record(1, "gpt-4o", 1.0, rnd, count_method="provider")
    report = calibrate([rec])
    assert report["records"]["excluded"]["provider_counted"] == 1
    assert report["delta_factors"] == [] and report["level_ratios"] == []


def test_small_n_gets_no_correction_and_reports_effective_n() -> None:
    rnd = random.Random(5)
    report = calibrate([record(i, "claude-sonnet-4-5", 1.5, rnd) for i in range(2)])
    (row,) = report["delta_factors"]
    assert row["n"] == 2 and 1.0 <= row["effective_n"] <= 2.0
    assert not row["suggested"]
    assert row["verdict"].startswith("no correction: effective n")
    suggested = yaml.safe_load(report["suggested_yaml"])
    assert suggested == {"families": {}}
    assert "no correction" in report["suggested_yaml"]


def test_an_interval_containing_one_gets_no_correction() -> None:
    rnd = random.Random(6)
    recs = [record(i, "gpt-4o", 1.0, rnd, noise=0.2) for i in range(200)]
    (row,) = calibrate(recs)["delta_factors"]
    low, high = row["interval"]
    assert low <= 1.0 <= high
    assert not row["suggested"] and "contains 1.0" in row["verdict"]


def test_min_n_and_confidence_are_options() -> None:
    rnd = random.Random(7)
    recs = [record(i, "claude-sonnet-4-5", 1.3, rnd) for i in range(12)]
    assert not calibrate(recs)["delta_factors"][0]["suggested"]
    row = calibrate(recs, min_effective_n=5)["delta_factors"][0]
    assert row["suggested"]
    narrow = calibrate(recs, min_effective_n=5, confidence=0.5)["delta_factors"][0]["interval"]
    assert narrow[1] - narrow[0] < row["interval"][1] - row["interval"][0]


def test_haiku_and_sonnet_are_calibrated_apart_and_each_gets_its_own_family() -> None:
    rnd = random.Random(8)
    recs = [record(i, "claude-haiku-4-5" if i % 2 else "claude-sonnet-4-5", 1.4 if i % 2 else 1.1, rnd)
            for i in range(200)]
    report = calibrate(recs)
    rows = delta_by_tokenizer(report)
    assert set(rows) == {"anthropic-claude-4", "anthropic-claude-4-haiku"}
    assert rows["anthropic-claude-4-haiku"]["factor"] == pytest.approx(1.4, abs=0.01)
    assert rows["anthropic-claude-4"]["factor"] == pytest.approx(1.1, abs=0.01)
    assert rows["anthropic-claude-4"]["families"] == ["anthropic"]
    (place,) = rows["anthropic-claude-4-haiku"]["placement"]
    assert place["new"] and place["copy_from"] == "anthropic"
    assert "claude-haiku-4-5" in place["models"] and "claude-sonnet-4-5" not in place["models"]
    families = yaml.safe_load(report["suggested_yaml"])["families"]
    assert families["anthropic-claude-4-haiku"] == {
        "cache_write_5m_multiplier": 1.25, "cache_write_1h_multiplier": 2.0,
        "billed_token_factor": {"tiktoken:o200k_base": round(rows["anthropic-claude-4-haiku"]["factor"], 3)},
    }
    assert "anthropic" not in families  # never one factor for both


def test_a_family_of_one_tokenizer_gets_the_factor_itself() -> None:
    rnd = random.Random(9)
    recs = [record(i, "gpt-4o" if i % 2 else "gpt-4.1", 1.25, rnd) for i in range(80)]
    report = calibrate(recs)
    (row,) = report["delta_factors"]
    assert row["tokenizer"] == "o200k_base" and row["models"] == ["gpt-4.1", "gpt-4o"]
    (place,) = row["placement"]
    assert place == {**place, "family": "openai", "new": False}
    assert "every model of openai has tokenizer o200k_base" in place["text"]
    families = yaml.safe_load(report["suggested_yaml"])["families"]
    assert families == {"openai": {"billed_token_factor": {"tiktoken:o200k_base": round(row["factor"], 3)}}}


V1_TABLE = """\
schema: llm-savings-prices/v1
versions:
  - version: "v1"
    effective_from: "2025-01-01T00:00:00Z"
    families: {acme: {cache_write_5m_multiplier: 1.5}}
    models:
      house-a: {family: acme, input: 1.0, output: 2.0}
      house-b: {family: acme, input: 1.0, output: 2.0}
"""


def test_models_without_a_tokenizer_key_are_never_pooled() -> None:
    table = parse_price_table(V1_TABLE, "v1.yaml")  # a v1 table without tokenizer keys still loads
    rnd = random.Random(10)
    cal = Calibration(table=table)
    for i in range(80):
        cal.add_object(record(i, "house-a" if i % 2 else "house-b", 1.3 if i % 2 else 1.1, rnd))
    report = cal.report()
    rows = delta_by_tokenizer(report)
    assert set(rows) == {"model:house-a", "model:house-b"}
    (place,) = rows["model:house-a"]["placement"]
    assert place["family"] == "acme-house-a" and place["copied"] == {"cache_write_5m_multiplier": 1.5}
    assert place["models"] == ["house-a"]


def test_unknown_models_are_their_own_group_with_nowhere_to_put_a_factor() -> None:
    rnd = random.Random(11)
    report = calibrate([record(i, "mystery-model", 1.3, rnd) for i in range(60)])
    (row,) = report["delta_factors"]
    assert row["tokenizer"] == "model:mystery-model" and row["suggested"]
    assert row["placement"][0]["family"] is None
    assert yaml.safe_load(report["suggested_yaml"]) == {"families": {}}
    assert "nowhere to put it" in report["suggested_yaml"]


def test_placement_follows_the_version_in_force() -> None:
    text = V1_TABLE + """\
  - version: "v2"
    effective_from: "2026-01-01T00:00:00Z"
    families: {acme: {}}
    models:
      house-a: {family: acme, tokenizer: acme-bpe, input: 1.0, output: 2.0}
"""
    table = parse_price_table(text, "t.yaml")
    rec = parse_object({"ts": "2025-06-01T00:00:00Z", "model": "house-a"})
    assert isinstance(rec, Record)
    assert placement_of(rec, table).tokenizer == "model:house-a"
    rec = parse_object({"ts": "2026-06-01T00:00:00Z", "model": "house-a"})
    assert isinstance(rec, Record)
    assert placement_of(rec, table).tokenizer == "acme-bpe"


def test_level_ratios_are_keyed_by_tokenizer() -> None:
    rnd = random.Random(12)
    recs = [record(i, "claude-haiku-4-5" if i % 2 else "claude-sonnet-4-5", 1.2, rnd) for i in range(10)]
    for rec in recs:
        del rec["billed_before"], rec["billed_after"]
    report = calibrate(recs)
    assert {lv["tokenizer"] for lv in report["level_ratios"]} == {"anthropic-claude-4", "anthropic-claude-4-haiku"}
    assert "NOT a delta factor" in report["suggested_yaml"]


@pytest.mark.parametrize(
    ("model", "provider", "family"),
    [("claude-3-5-haiku", None, "anthropic"), ("anthropic/claude-opus-4", None, "anthropic"),
     ("gpt-4o", None, "openai"), ("gemini-2.5-flash", None, "google"), ("gpt-4o", "Azure", "azure"),
     ("mystery", None, "unknown")],
)
def test_family_of(model: str, provider: str | None, family: str) -> None:
    assert family_of(model, provider) == family


_values = st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats() | st.text(max_size=8)


@settings(max_examples=150, deadline=None)
@given(
    extra=st.dictionaries(
        st.sampled_from(["tokens_before", "tokens_after", "billed_before", "billed_after", "count_method",
                         "usage", "provider", "model", "ts", "request_id"]),
        _values | st.dictionaries(st.sampled_from(["prompt_tokens", "input_tokens", "cache_read_input_tokens"]),
                                  _values),
        max_size=6,
    ),
    junk=st.binary(max_size=40),
)
def test_calibration_never_raises_on_hostile_lines(extra: dict[str, Any], junk: bytes) -> None:
    cal = Calibration(table=BUNDLED)
    cal.add_line(junk)
    cal.add_object({**record(1, "claude-sonnet-4-5", 1.1, random.Random(0)), **extra})
    report = cal.report()
    assert report["records"]["used_for_delta_factor"] <= 1
    for d in report["delta_factors"]:
        assert math.isfinite(d["factor"])
        assert not d["suggested"]  # one row is never enough


def test_billed_counts_beyond_the_exporters_bound_are_unusable() -> None:
    rnd = random.Random(13)
    rec = record(1, "claude-sonnet-4-5", 1.2, rnd, billed_before=10**400)
    report = calibrate([rec, record(2, "claude-sonnet-4-5", 1.2, rnd, billed_after=True)])
    assert report["records"]["billed_pair_unusable"] == 2 and report["delta_factors"] == []
