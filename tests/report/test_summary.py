"""The month summary: figures computed by hand, breakdowns that add up to replay's totals, optional fields."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.engine.pipeline import Pipeline
from exporter.prices.table import parse_price_table
from exporter.report.summary import COMPONENT_USD_KEY, OPTIONAL_KEYS, Count, MonthSummary, Report, build_report
from tests.engine.test_tiered_pricing import MONTH as TIERED_MONTH
from tests.engine.test_tiered_pricing import TABLE as TIERED_TABLE
from tests.engine.test_tiered_pricing import _line as tiered_line
from tests.report.conftest import PRICES, line

TABLE = parse_price_table(PRICES, "test-prices.yaml")
NOV = "2026-11-05T10:00:00Z"
FIRST = line(ts=NOV, request_id="r1", model="gpt-4o", tenant="a", tokens_before=1000, tokens_after=600,
             count_method="provider", components=[{"name": "trim", "tokens_saved": 300}],
             usage={"prompt_tokens": 700, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 300}})
LINES = [
    FIRST,
    line(ts=NOV, request_id="r2", model="gpt-4o", tenant="b", tokens_before=500, tokens_after=500,
         count_method="tiktoken:o200k_base"),
    line(ts=NOV, request_id="r3", model="mystery", tenant="a", tokens_before=200, tokens_after=100,
         count_method="provider"),
    FIRST,  # a duplicate
    b"not json",
    line(ts="2026-10-20T00:00:00Z", request_id="r4", model="gpt-4o", tenant="a", tokens_before=100, tokens_after=50,
         count_method="provider"),
    line(ts=NOV, model="gpt-4o", tenant="b"),  # no request id: flagged
]


def _report(pipeline: Pipeline, month: str | None = None, totals: dict[str, Any] | None = None) -> Report:
    agg = pipeline.aggregates
    return build_report(agg, totals if totals is not None else agg.month_totals(), source="test",
                        generated_at="2026-11-20T00:00:00Z", timezone="UTC", month=month, price_versions=["v1"])


def test_figures_breakdowns_and_provenance_by_hand(counted: Callable[[list[bytes]], Pipeline]) -> None:
    report = _report(counted(LINES))
    assert report.month == "2026-11" and report.note == ""
    nov = report.focus
    assert nov is not None
    assert nov.totals == counted(LINES).aggregates.month_totals()["2026-11"]  # replay's own numbers
    assert nov.totals["requests"] == 4 and nov.totals["tokens_saved"] == 500
    gpt, mystery = nov.by_model
    assert (gpt.name, gpt.requests, gpt.tokens_saved, gpt.unpriced_requests) == ("gpt-4o", 3, 400, 0)
    assert gpt.usd_saved == pytest.approx(400 * 2.0 / 1e6)  # provider counts: factor 1, list input price
    assert gpt.spend_usd == pytest.approx((400 * 2.0 + 300 * 1.0 + 20 * 10.0) / 1e6)
    assert gpt.cache_savings_usd == pytest.approx(300 * (2.0 - 1.0) / 1e6)
    assert (mystery.name, mystery.requests, mystery.tokens_saved, mystery.unpriced_requests) == ("mystery", 1, 100, 1)
    assert (mystery.usd_saved, mystery.spend_usd) == (0.0, 0.0)  # unpriced: no dollars invented
    assert [(t.name, t.requests, t.tokens_saved) for t in nov.by_tenant] == [("a", 2, 500), ("b", 2, 0)]
    assert [(c.name, c.tokens_saved) for c in nov.by_component] == [("trim", 300), ("unattributed", 200)]
    if COMPONENT_USD_KEY in nov.totals:  # the engine counts dollars by component
        assert [c.usd_saved for c in nov.by_component] == pytest.approx([300 * 2.0 / 1e6, 100 * 2.0 / 1e6])
    else:
        assert [c.usd_saved for c in nov.by_component] == [None, None]
    prov = nov.provenance
    assert [(t.name, t.requests) for t in prov.price_versions] == [("v1", 3)]
    assert [(t.name, t.requests, t.tokens_saved) for t in prov.count_methods] == [
        ("provider", 2, 500), ("tiktoken:o200k_base", 1, 0)]
    assert [(t.name, t.requests) for t in prov.factor_sources] == [("provider", 1), ("default", 1)]
    assert prov.flagged == (Count("no_id", 1),)
    assert prov.unpriced == (Count("unknown_model", 1),)
    assert prov.duplicates == 1
    assert [m.month for m in report.months] == ["2026-10", "2026-11", "unknown"]  # not-JSON has no month
    assert report.months[-1].provenance.rejected == (Count("invalid_json", 1),)


def _without_optional(totals: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Month totals as an engine that does not count baselines, component dollars or optimizer spend has them."""
    dropped = (*OPTIONAL_KEYS, COMPONENT_USD_KEY)
    return {month: {k: v for k, v in body.items() if k not in dropped} for month, body in totals.items()}


def test_optional_figures_stay_none_until_counted(counted: Callable[[list[bytes]], Pipeline]) -> None:
    totals = _without_optional(counted(LINES).aggregates.month_totals())
    nov = _report(counted(LINES), totals=totals).focus
    assert nov is not None
    assert (nov.saved_pct, nov.compression_ratio, nov.net_usd_saved) == (None, None, None)
    assert not nov.optimizer_counted and [c.usd_saved for c in nov.by_component] == [None, None]
    totals["2026-11"].update(baseline_input_tokens=1700, sent_input_tokens=1200, optimizer_spend_usd=0.0002,
                             usd_saved_by_component={"trim": 0.0006})
    nov = _report(counted(LINES), totals=totals).focus
    assert nov is not None
    assert nov.saved_pct == pytest.approx(500 / 1700)
    assert nov.compression_ratio == pytest.approx(1700 / 1200)
    assert nov.net_usd_saved == pytest.approx(0.0008 - 0.0002) and nov.optimizer_counted
    assert [(c.name, c.usd_saved) for c in nov.by_component] == [("trim", 0.0006), ("unattributed", 0.0)]
    totals["2026-11"].update(saved_pct=0.25, compression_ratio=2.0, net_usd_saved=0.5)  # the engine's own wins
    nov = _report(counted(LINES), totals=totals).focus
    assert nov is not None and (nov.saved_pct, nov.compression_ratio, nov.net_usd_saved) == (0.25, 2.0, 0.5)


def test_focus_month(counted: Callable[[list[bytes]], Pipeline]) -> None:
    pipeline = counted(LINES)
    assert _report(pipeline, "2026-10").month == "2026-10"
    later = _report(pipeline, "2026-12")
    assert later.month == "2026-11" and "2026-12" in later.note
    empty = _report(counted([]), "2026-12")
    assert (empty.month, empty.focus, empty.months) == (None, None, ())
    only_rejects = _report(counted([b"{"]))
    assert only_rejects.month is None and [m.month for m in only_rejects.months] == ["unknown"]


records = st.lists(st.fixed_dictionaries({
    "request_id": st.text("abcdef", min_size=1, max_size=3),
    "model": st.sampled_from(["gpt-4o", "claude-x", "unknown-y"]),
    "tenant": st.sampled_from(["a", "b", "c"]),
    "ts": st.sampled_from(["2026-10-03T00:00:00Z", "2026-11-04T00:00:00Z"]),
    "tokens_before": st.integers(0, 10_000), "tokens_after": st.integers(0, 10_000),
    "count_method": st.sampled_from(["provider", "tiktoken:o200k_base", "estimate:chars/4"]),
    "usage": st.fixed_dictionaries({"prompt_tokens": st.integers(100, 5000), "completion_tokens": st.integers(0, 500),
                                    "prompt_tokens_details": st.fixed_dictionaries(
                                        {"cached_tokens": st.integers(0, 100)})}),
}), max_size=40)


def _sums(month: MonthSummary, rows: str) -> tuple[int, int, float, float, float]:
    found = getattr(month, rows)
    return (sum(r.requests for r in found), sum(r.tokens_saved for r in found), sum(r.usd_saved for r in found),
            sum(r.spend_usd for r in found), sum(r.cache_savings_usd for r in found))


@settings(max_examples=60, deadline=None)
@given(records)
def test_breakdowns_add_up_to_replays_month_totals(batch: list[dict[str, Any]]) -> None:
    pipeline = Pipeline(TABLE)
    pipeline.ingest_lines([line(**record) for record in batch])
    report = _report(pipeline)
    for month in report.months:
        totals = month.totals
        for rows in ("by_model", "by_tenant"):
            requests, saved, usd, spend, cache = _sums(month, rows)
            assert (requests, saved) == (totals["requests"], totals["tokens_saved"])
            assert usd == pytest.approx(totals["usd_saved"], rel=1e-12, abs=1e-18)
            assert spend == pytest.approx(totals["spend_usd"], rel=1e-12, abs=1e-18)
            assert cache == pytest.approx(totals["cache_savings_usd"], rel=1e-12, abs=1e-18)
        assert sum(c.tokens_saved for c in month.by_component) == totals["tokens_saved"]
        assert sum(t.requests for t in month.provenance.price_versions) == totals["requests"] - totals["unpriced"]
        assert sum(c.total for c in month.provenance.unpriced) == totals["unpriced"]
        usd_by_source = sum(t.usd_saved for t in month.provenance.factor_sources)
        assert usd_by_source == pytest.approx(totals["usd_saved"], rel=1e-12, abs=1e-18)


def test_populations_when_the_engine_counts_baselines(counted: Callable[[list[bytes]], Pipeline]) -> None:
    totals = _without_optional(counted(LINES).aggregates.month_totals())
    nov = _report(counted(LINES), totals=totals).focus
    assert nov is not None and nov.populations == ()
    totals["2026-11"].update(baseline_input_tokens=1700, sent_input_tokens=1200, populations={
        "compacted": {"baseline_input_tokens": 1200, "sent_input_tokens": 700},
        "untouched": {"baseline_input_tokens": 500, "sent_input_tokens": 500, "saved_pct": 0.0,
                      "compression_ratio": 1.0}})
    nov = _report(counted(LINES), totals=totals).focus
    assert nov is not None
    compacted, untouched, everything = nov.populations
    assert compacted == ("compacted", 1200, 700, pytest.approx(500 / 1200), pytest.approx(1200 / 700))
    assert untouched == ("untouched", 500, 500, 0.0, 1.0)
    assert everything == ("all", 1700, 1200, pytest.approx(500 / 1700), pytest.approx(1700 / 1200))


def test_a_saving_across_a_prompt_tier_lists_its_tier_jump_as_a_component() -> None:
    pipeline = Pipeline(parse_price_table(TIERED_TABLE, "t.yaml"))
    pipeline.ingest_line(tiered_line(
        request_id="a", tokens_before=250_000, tokens_after=150_000, count_method="provider",
        components=[{"name": "trim_history", "tokens_saved": 60_000}],
        usage={"promptTokenCount": 150_000, "candidatesTokenCount": 1_000}))
    focus = _report(pipeline, TIERED_MONTH).focus
    assert focus is not None
    # 150k x (2.5 - 1.25) + 1k x (15 - 10) per million; the saved tokens at the upper tier's 2.5
    assert [(c.name, c.tokens_saved, c.usd_saved) for c in focus.by_component] == [
        ("tier_jump", 0, 0.1925), ("trim_history", 60_000, 0.15), ("unattributed", 40_000, 0.1)]
