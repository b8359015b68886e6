"""The four kinds of saving in the summary and every writer: side by side, their total and shares."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from exporter.engine.pipeline import Pipeline
from exporter.engine.records import parse_ts
from exporter.report.html import render_html
from exporter.report.json_report import render_json
from exporter.report.kinds import KIND_NAMES, SavingsByKind, kind_lines, savings_by_kind
from exporter.report.markdown import render_markdown
from exporter.report.summary import Report, build_report
from exporter.report.text import WIDTH, render_text, width
from tests.report.conftest import line

NOV = "2026-11-05T10:00:00Z"
LINES = [line(ts=NOV, request_id=f"r{i}", model="gpt-4o", tenant="t1", tokens_before=1000, tokens_after=600,
              count_method="provider",
              usage={"prompt_tokens": 700, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 300}})
         for i in range(4)]
# every kind non-zero, routing net negative (extra cost above savings)
KINDS = SavingsByKind(response_cache_usd=1.25, response_cache_hits=17, response_cache_unpriced_hits=3,
                      routing_savings_usd=0.5, routing_extra_usd=0.75)


def _report(counted: Callable[[list[bytes]], Pipeline], kinds: SavingsByKind = KINDS) -> Report:
    agg = counted(LINES).aggregates
    report = build_report(agg, agg.month_totals(), source="replay of 1 file", generated_at="2026-11-20T00:00:00Z",
                          timezone="UTC", month="2026-11", price_versions=["v1"])
    months = tuple(dataclasses.replace(m, kinds=kinds) for m in report.months)
    return dataclasses.replace(report, months=months)


def test_without_hits_or_routes_response_cache_and_routing_are_zero(
        counted: Callable[[list[bytes]], Pipeline]) -> None:
    agg = counted(LINES).aggregates
    assert savings_by_kind(agg.month_totals()["2026-11"]) == SavingsByKind(0.0, 0, 0, 0.0, 0.0)
    report = build_report(agg, agg.month_totals(), source="s", generated_at="g", timezone="UTC", month="2026-11",
                          price_versions=["v1"])
    focus = report.focus
    assert focus is not None
    lines = {line.name: line.usd for line in focus.by_kind}
    assert lines["compression"] == focus.totals["usd_saved"] > 0
    assert lines["provider_cache"] == focus.totals["cache_savings_usd"] > 0
    assert lines["response_cache"] == lines["routing"] == 0


HIT_AND_ROUTES = [
    line(ts=NOV, request_id="hit1", model="gpt-4o", response_cache="exact",
         usage={"prompt_tokens": 1000, "completion_tokens": 100}),
    line(ts=NOV, request_id="hit2", model="gpt-4o", response_cache="semantic"),  # no usage: dollars unknown
    line(ts=NOV, request_id="cheap", model="gpt-4o", requested_model="claude-x",
         usage={"prompt_tokens": 1000, "completion_tokens": 100}),
    line(ts=NOV, request_id="dear", model="claude-x", requested_model="gpt-4o",
         usage={"prompt_tokens": 2000, "completion_tokens": 0}),
]


def test_the_engine_s_hits_and_routes_reach_the_report(counted: Callable[[list[bytes]], Pipeline]) -> None:
    pipeline = counted(LINES + HIT_AND_ROUTES)
    agg = pipeline.aggregates
    totals = agg.month_totals()
    report = build_report(agg, totals, source="s", generated_at="g", timezone="UTC", month="2026-11",
                          price_versions=["v1"])
    focus = report.focus
    assert focus is not None
    ts = parse_ts(NOV)
    cheap, dear = pipeline.prices.lookup("gpt-4o", ts), pipeline.prices.lookup("claude-x", ts)
    assert not isinstance(cheap, str) and not isinstance(dear, str)
    avoided = (1000 * cheap.input + 100 * cheap.output) / 1e6  # the hit with usage, at its own model
    saved = (1000 * (dear.input - cheap.input) + 100 * (dear.output - cheap.output)) / 1e6  # asked dear, got cheap
    extra = 2000 * (dear.input - cheap.input) / 1e6  # asked cheap, got dear: a negative saving
    assert saved > 0 and extra > 0
    kinds = focus.kinds
    assert (kinds.response_cache_hits, kinds.response_cache_unpriced_hits) == (2, 1)
    assert math.isclose(kinds.response_cache_usd, avoided, rel_tol=1e-12)
    assert math.isclose(kinds.routing_savings_usd, saved, rel_tol=1e-12)
    assert math.isclose(kinds.routing_extra_usd, extra, rel_tol=1e-12)
    by_kind = {k.name: k.usd for k in focus.by_kind}
    assert math.isclose(by_kind["routing"], saved - extra, rel_tol=1e-12)
    assert by_kind["compression"] == totals["2026-11"]["usd_saved"]


def test_json_has_every_kind_the_total_and_shares(counted: Callable[[list[bytes]], Pipeline]) -> None:
    parsed = json.loads(render_json(_report(counted)))["months"]["2026-11"]
    kinds = parsed["savings_by_kind"]
    usd = {k["kind"]: k["usd_saved"] for k in kinds["kinds"]}
    totals = parsed["totals"]
    assert usd == {"compression": totals["usd_saved"], "provider_cache": totals["cache_savings_usd"],
                   "response_cache": 1.25, "routing": -0.25}
    assert math.isclose(kinds["total_usd_saved"], sum(usd.values()))
    for k in kinds["kinds"]:
        assert math.isclose(k["share"], k["usd_saved"] / kinds["total_usd_saved"])
    assert (kinds["response_cache_hits"], kinds["response_cache_unpriced_hits"]) == (17, 3)
    assert (kinds["routing_savings_usd"], kinds["routing_extra_cost_usd"]) == (0.5, 0.75)


def test_text_markdown_and_html_show_the_kinds(counted: Callable[[list[bytes]], Pipeline]) -> None:
    report = _report(counted)
    text, markdown, html = render_text(report), render_markdown(report), render_html(report)
    assert all(width(row) == WIDTH for row in text.splitlines())
    for shown in (text, markdown, html):
        assert "Savings by kind" in shown
        for label in ("response cache", "routing (net)", "provider prompt cache (net)", "total saved"):
            assert label in shown
        assert "$1.25" in shown  # the response cache's avoided dollars
        assert "-$0.25" in shown or "−$0.25" in shown  # a negative routing net stays negative
        assert "17 (3 unpriced" in shown
        assert "extra cost $0.75" in shown
    assert html.count("data-kind=") == 5


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=4, max_size=4))
def test_total_is_the_sum_and_shares_add_up_to_one(values: list[float]) -> None:
    kinds = SavingsByKind(response_cache_usd=values[2], routing_savings_usd=max(values[3], 0.0),
                          routing_extra_usd=max(-values[3], 0.0))
    lines = kind_lines({"usd_saved": values[0], "cache_savings_usd": values[1]}, kinds)
    assert tuple(line.name for line in lines) == KIND_NAMES
    total = sum(line.usd for line in lines)
    assert math.isclose(total, sum(values), abs_tol=1e-6)
    if total == 0:
        assert all(line.share is None for line in lines)
    elif abs(total) > 1e-3:
        shares = [line.share for line in lines]
        assert all(s is not None for s in shares)
        assert math.isclose(sum(s for s in shares if s is not None), 1.0, rel_tol=1e-6, abs_tol=1e-6)
