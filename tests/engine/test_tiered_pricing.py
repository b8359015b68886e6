"""The engine with price table v2: spend is the provider's bill, savings are bills' differences (cliffs)."""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.engine.cells import cell_dollars, exact_cell_dollars, exact_saved_usd, exact_tier_jump
from exporter.engine.pipeline import Pipeline
from exporter.exposition.render import Exposition
from exporter.prices.table import PricedModel, parse_price_table
from exporter.prices.tiers import UsageTiers, bill
from tests.support.processes import by_label, samples

TABLE = """\
schema: llm-savings-prices/v2
versions:
  - version: "2025-06-17"
    effective_from: "2025-06-17T00:00:00Z"
    families: {google: {billed_token_factor: {"tiktoken:o200k_base": 1.1}}}
    models:
      "gemini-2.5-pro":
        family: google
        input: 1.25
        output: 10.0
        cache_read: 0.125
        tiers:
          - {above: 200000, input: 2.5, output: 15.0, cache_read: 0.25}
        service_tiers:
          batch: {multiplier: 0.5}
      "gpt-4o":
        input: 2.5
        output: 10.0
        cache_read: 1.25
"""
V1 = TABLE.replace("prices/v2", "prices/v1").split('      "gemini-2.5-pro":')[0] + """\
      "gemini-2.5-pro":
        family: google
        input: 1.25
        output: 10.0
        cache_read: 0.125
      "gpt-4o":
        input: 2.5
        output: 10.0
        cache_read: 1.25
"""
NO_TIERS = V1.replace("prices/v1", "prices/v2")
TS = datetime(2025, 7, 1, 12, tzinfo=UTC).timestamp()
MONTH = "2025-07"


def _pipeline(text: str = TABLE) -> Pipeline:
    return Pipeline(parse_price_table(text, "t.yaml"))


def _line(**fields: Any) -> bytes:
    return json.dumps({"ts": TS, "model": "gemini-2.5-pro", **fields}).encode()


def _rates(table: str, **kw: Any) -> PricedModel:
    found = parse_price_table(table, "t.yaml").lookup("gemini-2.5-pro", TS, **kw)
    assert isinstance(found, PricedModel)
    return found


def test_compression_across_the_tier_saves_the_jump():
    pipeline = _pipeline()
    pipeline.ingest_line(_line(request_id="a", tokens_before=250_000, tokens_after=150_000, count_method="provider",
                               usage={"promptTokenCount": 150_000, "candidatesTokenCount": 1_000}))
    totals = pipeline.aggregates.month_totals()[MONTH]
    low, high = _rates(TABLE, prompt_tokens=150_000), _rates(TABLE, prompt_tokens=250_000)
    assert (low.input, high.input) == (1.25, 2.5)
    actual = bill(UsageTiers(150_000, 0, 0, 0, 1_000), low)
    counterfactual = bill(UsageTiers(250_000, 0, 0, 0, 1_000), high)
    assert totals["spend_usd"] == float(actual)
    assert totals["usd_saved"] == float(counterfactual - actual)
    # the float figures of /metrics say the same
    (key, cell), = pipeline.aggregates.cells.items()
    dollars = cell_dollars(cell, pipeline.aggregates.rate_book[key.rate_id], key.method)
    assert math.isclose(dollars.usd_saved, float(counterfactual - actual), rel_tol=1e-12)
    # more than the input rate alone would say: the output also leaves the dearer tier
    assert counterfactual - actual > Fraction(100_000 * 125, 100 * 10**6)


def test_would_have_saved_across_the_tier():
    pipeline = _pipeline()
    pipeline.ingest_line(_line(request_id="w", would_have_saved=100_000,
                               usage={"promptTokenCount": 250_000, "candidatesTokenCount": 2_000}))
    totals = pipeline.aggregates.month_totals()[MONTH]
    actual = bill(UsageTiers(250_000, 0, 0, 0, 2_000), _rates(TABLE, prompt_tokens=250_000))
    smaller = bill(UsageTiers(150_000, 0, 0, 0, 2_000), _rates(TABLE, prompt_tokens=150_000))
    assert totals["spend_usd"] == float(actual)
    assert totals["would_have_saved_usd"] == float(actual - smaller)


def test_a_long_prompt_is_billed_whole_at_the_tier_and_the_float_figures_agree():
    pipeline = _pipeline()
    pipeline.ingest_line(_line(request_id="b", usage={"promptTokenCount": 300_000, "candidatesTokenCount": 10}))
    pipeline.ingest_line(_line(request_id="c", usage={"promptTokenCount": 1_000, "candidatesTokenCount": 10}))
    totals = pipeline.aggregates.month_totals()[MONTH]
    expected = (bill(UsageTiers(300_000, 0, 0, 0, 10), _rates(TABLE, prompt_tokens=300_000))
                + bill(UsageTiers(1_000, 0, 0, 0, 10), _rates(TABLE)))
    assert totals["spend_usd"] == float(expected)
    tiers = {rates.tier for rates in pipeline.aggregates.rate_book}
    assert tiers == {"", "above_200000"}


def test_service_tier_prices_and_unknown_is_flagged():
    pipeline = _pipeline()
    pipeline.ingest_line(_line(request_id="d", service_tier="batch", usage={"promptTokenCount": 1_000_000 // 8,
                                                                           "candidatesTokenCount": 0}))
    pipeline.ingest_line(_line(request_id="e", model="gpt-4o", service_tier="Flex",
                               usage={"prompt_tokens": 1_000, "completion_tokens": 0}))
    agg = pipeline.aggregates
    assert agg.month_totals()[MONTH]["spend_usd"] == float(Fraction(125_000 * 625, 1000 * 10**6)
                                                           + Fraction(1_000 * 25, 10 * 10**6))
    assert agg.flagged == {(MONTH, "unknown_service_tier"): 1}
    assert {r.service_tier for r in agg.rate_book} == {"batch", "unknown"}


def _records(draw_tokens: list[tuple[int, int, int, int]]) -> list[bytes]:
    lines = []
    for index, (prompt, output, before, after) in enumerate(draw_tokens):
        lines.append(_line(request_id=str(index), tokens_before=before, tokens_after=after,
                           count_method="tiktoken:o200k_base", would_have_saved=after // 3,
                           usage={"promptTokenCount": prompt, "candidatesTokenCount": output}))
    return lines


requests = st.lists(st.tuples(st.integers(0, 400_000), st.integers(0, 5_000), st.integers(0, 300_000),
                              st.integers(0, 300_000)), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(requests)
def test_no_tier_defined_is_bit_identical_to_v1(draws):
    lines = _records(draws)
    v1, v2 = _pipeline(V1), _pipeline(NO_TIERS)
    v1.ingest_lines(lines)
    v2.ingest_lines(lines)
    assert v1.aggregates.month_totals() == v2.aggregates.month_totals()
    assert v1.aggregates.to_state() == v2.aggregates.to_state()


@settings(max_examples=60, deadline=None)
@given(requests, st.randoms(use_true_random=False))
def test_tiered_totals_are_order_independent_and_savings_never_negative(draws, rng: random.Random):
    lines = _records([d if d[2] >= d[3] else (d[0], d[1], d[3], d[2]) for d in draws])
    first, second = _pipeline(), _pipeline()
    first.ingest_lines(lines)
    shuffled = list(lines)
    rng.shuffle(shuffled)
    second.ingest_lines(shuffled)
    totals = first.aggregates.month_totals()
    assert totals == second.aggregates.month_totals()
    assert totals[MONTH]["usd_saved"] >= 0
    assert totals[MONTH]["would_have_saved_usd"] >= 0
    restored = type(first.aggregates).from_state(json.loads(json.dumps(first.aggregates.to_state())))
    assert restored.month_totals() == totals


def _by_component(pipeline: Pipeline) -> dict[str, float]:
    parsed = samples(Exposition(pipeline.month_of.start).render(pipeline.aggregates, []).decode())
    return by_label(parsed, "llm_savings_component_usd_saved_total", "component")


def test_components_of_a_saving_across_the_tier_get_the_marginal_rate_and_the_jump_apart():
    # 250k -> 150k tokens: the counterfactual is billed at the upper tier (2.5 in, 15 out), the actual at the base
    pipeline = _pipeline()
    pipeline.ingest_line(_line(request_id="a", tokens_before=250_000, tokens_after=150_000, count_method="provider",
                               components=[{"name": "trim_history", "tokens_saved": 60_000}],
                               usage={"promptTokenCount": 150_000, "candidatesTokenCount": 1_000}))
    totals = pipeline.aggregates.month_totals()[MONTH]
    # 60k and 40k saved tokens at the counterfactual's 2.5 $/M; the jump: 150k x (2.5 - 1.25) + 1k x (15 - 10)
    assert totals["usd_saved_by_component"] == {"trim_history": 0.15, "unattributed": 0.1, "tier_jump": 0.1925}
    assert totals["usd_saved"] == 0.4425  # bill(250k in, 1k out at the tier) - bill(150k in, 1k out at base)
    assert sum(Fraction(str(v)) for v in totals["usd_saved_by_component"].values()) == Fraction("0.4425")
    assert totals["tokens_saved_by_component"] == {"trim_history": 60_000, "unattributed": 40_000}  # no jump tokens
    metrics = _by_component(pipeline)
    assert metrics.keys() == {"trim_history", "unattributed", "tier_jump"}
    for name, usd in (("trim_history", 0.15), ("unattributed", 0.1), ("tier_jump", 0.1925)):
        assert math.isclose(metrics[name], usd, rel_tol=1e-12)


def test_a_saving_within_one_tier_has_no_jump():
    pipeline = _pipeline()
    pipeline.ingest_line(_line(request_id="a", tokens_before=150_000, tokens_after=100_000, count_method="provider",
                               usage={"promptTokenCount": 100_000, "candidatesTokenCount": 1_000}))
    totals = pipeline.aggregates.month_totals()[MONTH]
    assert totals["usd_saved_by_component"] == {"unattributed": 0.0625}  # 50k x 1.25 $/M
    assert _by_component(pipeline).keys() == {"unattributed"}


components = st.lists(st.tuples(st.sampled_from(["a", "b", "tier_jump"]), st.integers(0, 200_000)), max_size=3)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 400_000), st.integers(0, 5_000), st.integers(0, 400_000),
                          st.integers(0, 400_000), components, st.sampled_from(["provider", "tiktoken:o200k_base"])),
                min_size=1, max_size=10))
def test_components_sum_to_usd_saved_with_tiers(draws):
    pipeline = _pipeline()
    for index, (prompt, output, before, after, parts, method) in enumerate(draws):
        pipeline.ingest_line(_line(request_id=str(index), tokens_before=before, tokens_after=after,
                                   count_method=method,
                                   components=[{"name": n, "tokens_saved": t} for n, t in parts],
                                   usage={"promptTokenCount": prompt, "candidatesTokenCount": output}))
    agg = pipeline.aggregates
    exact = Fraction(0)
    for key, cell, rates in agg.priced_cells():
        if rates is not None and key.method:
            exact += exact_cell_dollars(cell, rates, key.method).usd_saved
    by_component = Fraction(0)
    for key, tokens in agg.components.items():
        by_component += exact_saved_usd(tokens, agg.rate_book[key.rate_id], key.method)
    by_component += sum((exact_tier_jump(cell, rates) for key, cell, rates in agg.priced_cells()
                         if rates is not None and key.method), Fraction(0))
    assert by_component == exact  # exactly: the components and the jump are usd_saved
    totals = agg.month_totals()
    if MONTH in totals:
        assert math.isclose(sum(totals[MONTH]["usd_saved_by_component"].values()), totals[MONTH]["usd_saved"],
                            rel_tol=1e-9, abs_tol=1e-12)
        metrics = _by_component(pipeline)
        assert math.isclose(sum(metrics.values()), totals[MONTH]["usd_saved"], rel_tol=1e-9, abs_tol=1e-12)
        assert all(value >= 0 for value in metrics.values())


def _optimizer_spend(call: dict[str, Any]) -> tuple[float, dict[tuple[str, str], int]]:
    pipeline = _pipeline()
    pipeline.ingest_line(_line(request_id="o", model="gpt-4o", tokens_before=2_000, tokens_after=1_000,
                               count_method="provider", optimizer={"model": "gemini-2.5-pro", **call}))
    return pipeline.aggregates.month_totals()[MONTH]["optimizer_spend_usd"], pipeline.aggregates.flagged


@pytest.mark.parametrize(("call", "usd", "flagged"), [
    # a 250k prompt is billed whole at the upper tier, and batch halves that: 250k x 1.25 + 1k x 7.5
    ({"service_tier": "batch", "usage": {"promptTokenCount": 250_000, "candidatesTokenCount": 1_000}}, 0.32, {}),
    # the upper tier, default service: 250k x 2.5 + 1k x 15
    ({"usage": {"promptTokenCount": 250_000, "candidatesTokenCount": 1_000}}, 0.64, {}),
    # under the threshold, base rates: 100k x 1.25 + 1k x 10
    ({"service_tier": "DEFAULT", "usage": {"promptTokenCount": 100_000, "candidatesTokenCount": 1_000}}, 0.135, {}),
    # a tier the model does not list: base rates, flagged
    ({"service_tier": "flex", "usage": {"promptTokenCount": 1_000, "candidatesTokenCount": 0}}, 0.00125,
     {(MONTH, "unknown_service_tier"): 1}),
])
def test_optimizer_calls_are_priced_by_their_prompt_tier_and_service_tier(call, usd, flagged):
    assert _optimizer_spend(call) == (usd, flagged)


@pytest.mark.parametrize(("record_tier", "optimizer_tier"), [("flex", "flex"), ("flex", "batch"), (None, "flex")])
def test_a_record_with_an_unknown_tier_is_flagged_once(record_tier, optimizer_tier):
    """``records_flagged_total`` counts records: an unknown tier on the record and on its optimizer call is one."""
    pipeline = _pipeline()
    tier = {} if record_tier is None else {"service_tier": record_tier}
    pipeline.ingest_line(_line(request_id="f", usage={"promptTokenCount": 1_000, "candidatesTokenCount": 10}, **tier,
                               optimizer={"model": "gemini-2.5-pro", "service_tier": optimizer_tier,
                                          "usage": {"promptTokenCount": 1_000, "candidatesTokenCount": 0}}))
    assert pipeline.aggregates.month_totals()[MONTH]["requests"] == 1
    assert pipeline.aggregates.flagged == {(MONTH, "unknown_service_tier"): 1}


def test_a_bad_optimizer_service_tier_is_refused_naming_the_field():
    pipeline = _pipeline()
    pipeline.ingest_line(_line(request_id="o", optimizer={"model": "gemini-2.5-pro", "service_tier": "no way",
                                                          "usage": {"promptTokenCount": 1}}))
    assert pipeline.last_rejection == "invalid_field"
    assert pipeline.aggregates.optimizer == {}
