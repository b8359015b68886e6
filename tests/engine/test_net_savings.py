"""Saved %, the compression ratio, dollars by component and net savings, worked out by hand.

Rates from tests/fixtures/engine/prices_two_versions.yaml, October version:
alpha input 3.0 / output 15.0 (factor tiktoken:o200k_base 1.37), gamma input
0.5 / output 1.5, per million tokens. Every expected figure below is written
as the decimal a person computes, and the replay JSON must print exactly that
float (the nearest one to the exact sum), not a float-noise neighbour.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from exporter.engine.aggregate import Aggregates, ComponentKey
from exporter.engine.pipeline import Pipeline
from exporter.engine.records import Rejection, parse_line
from exporter.exposition.render import Exposition
from exporter.prices.table import load_price_table
from tests.engine.test_arithmetic import PRICES, anthropic
from tests.support.processes import samples

OCT = "2026-10-15T12:00:00Z"


def pipeline() -> Pipeline:
    return Pipeline(load_price_table(PRICES))


def feed(p: Pipeline, *records: dict[str, Any]) -> Pipeline:
    for index, fields in enumerate(records):
        p.ingest_line(json.dumps({"request_id": f"r{index}", "ts": OCT, **fields}).encode())
    return p


def october(*records: dict[str, Any]) -> dict[str, Any]:
    totals: dict[str, Any] = feed(pipeline(), *records).aggregates.month_totals()["2026-10"]
    return totals


# --- saved % and the compression ratio ---------------------------------------------------------


def test_saved_pct_and_ratio_per_population_and_cumulative() -> None:
    totals = october(
        {"model": "alpha", "count_method": "provider", "tokens_before": 1000, "tokens_after": 600},  # compacted
        {"model": "alpha", "count_method": "provider", "tokens_before": 500, "tokens_after": 500},  # untouched
        {"model": "alpha", "count_method": "provider", "tokens_before": 200, "tokens_after": 250},  # grew: untouched
        {"model": "alpha", "count_method": "provider", "tokens_before": 900},  # incomplete: in neither
    )
    assert totals["tokens_saved"] == 400
    assert totals["baseline_input_tokens"] == 1700 and totals["sent_input_tokens"] == 1350
    assert totals["saved_pct"] == 400 / 1700
    assert totals["compression_ratio"] == 1700 / 1350
    assert totals["populations"] == {
        "compacted": {"baseline_input_tokens": 1000, "sent_input_tokens": 600, "saved_pct": 0.4,
                      "compression_ratio": 1000 / 600},
        "untouched": {"baseline_input_tokens": 700, "sent_input_tokens": 750, "saved_pct": 0.0,
                      "compression_ratio": 700 / 750},
    }
    assert totals["usd_saved"] == 0.0012  # 400 x 3.0 / 1e6


def test_no_savings_records_give_no_ratio() -> None:
    totals = october({"model": "alpha", "usage": anthropic(fresh=10)})
    assert totals["baseline_input_tokens"] == 0
    assert totals["saved_pct"] is None and totals["compression_ratio"] is None
    assert totals["populations"]["compacted"]["saved_pct"] is None


def test_tokens_saved_is_baseline_minus_sent_of_the_compacted_population_on_metrics() -> None:
    p = feed(pipeline(),
             {"model": "alpha", "tenant": "t", "count_method": "provider", "tokens_before": 1000, "tokens_after": 600},
             {"model": "alpha", "tenant": "t", "count_method": "provider", "tokens_before": 300, "tokens_after": 100},
             {"model": "alpha", "tenant": "t", "count_method": "provider", "tokens_before": 50, "tokens_after": 80})
    parsed = samples(Exposition(p.month_of.start).render(p.aggregates, []).decode())

    def value(name: str, **labels: str) -> float:
        return sum(v for k, v in parsed["llm_savings_" + name].items() if labels.items() <= dict(k).items())

    assert value("baseline_input_tokens_total", population="compacted") == 1300
    assert value("sent_input_tokens_total", population="compacted") == 700
    assert value("baseline_input_tokens_total", population="untouched") == 50
    assert value("sent_input_tokens_total", population="untouched") == 80
    assert value("tokens_saved_total") == 1300 - 700


# --- dollars by component ------------------------------------------------------------------------


COMPONENTS = {"model": "alpha", "count_method": "tiktoken:o200k_base", "tokens_before": 1000, "tokens_after": 300,
              "components": [{"name": "history", "tokens_saved": 500}, {"name": "tools", "tokens_saved": 150}]}


def test_dollars_by_component_by_hand() -> None:
    totals = october(COMPONENTS)
    assert totals["tokens_saved_by_component"] == {"history": 500, "tools": 150, "unattributed": 50}
    # tokens x 1.37 x 3.0 / 1e6
    assert totals["usd_saved_by_component"] == {"history": 0.002055, "tools": 0.0006165, "unattributed": 0.0002055}
    assert totals["usd_saved"] == 0.002877  # 700 x 1.37 x 3.0 / 1e6


def test_component_series_sum_to_usd_saved_on_metrics() -> None:
    p = feed(pipeline(), COMPONENTS, {**COMPONENTS, "tokens_before": 4000, "tokens_after": 1000})
    parsed = samples(Exposition(p.month_of.start).render(p.aggregates, []).decode())
    (labels, usd_saved), = parsed["llm_savings_usd_saved_total"].items()
    by_component = parsed["llm_savings_component_usd_saved_total"]
    # /metrics keeps the cheap float arithmetic (tokens x factor x rate per series): equal to rounding
    assert {dict(k)["component"]: v for k, v in by_component.items()} == pytest.approx(
        {"history": 0.00411, "tools": 0.001233, "unattributed": 0.009864}, rel=1e-15)  # 1000, 300, 2400 x 4.11e-6
    assert abs(sum(by_component.values()) - usd_saved) <= 1e-15
    for key in by_component:  # the same provenance as usd_saved_total
        assert {k: v for k, v in dict(key).items() if k != "component"} == dict(labels)


def test_components_keep_the_rates_of_their_cell() -> None:
    agg = feed(pipeline(), COMPONENTS).aggregates
    (cell_key,) = agg.cells
    assert {key.rate_id for key in agg.components} == {cell_key.rate_id}
    assert ComponentKey("2026-10", "alpha", "unset", "tiktoken:o200k_base", "tools", cell_key.rate_id) in agg.components


# --- net savings ----------------------------------------------------------------------------------


SAVING = {"model": "alpha", "count_method": "provider", "tokens_before": 10_000, "tokens_after": 4000}
GAMMA_CALL = {"model": "gamma", "usage": {"prompt_tokens": 2000, "completion_tokens": 100}}


def test_optimizer_spend_and_net_savings_by_hand() -> None:
    totals = october({**SAVING, "optimizer": GAMMA_CALL})
    assert totals["usd_saved"] == 0.018  # 6000 x 3.0 / 1e6
    assert totals["optimizer_spend_usd"] == 0.00115  # (2000 x 0.5 + 100 x 1.5) / 1e6
    assert totals["net_usd_saved"] == 0.01685
    assert totals["optimizer_requests"] == 1 and totals["optimizer_unpriced"] == 0
    assert totals["spend_usd"] == 0.0  # the optimizer's calls are not the request's spend


def test_unknown_optimizer_model_is_unpriced_not_free() -> None:
    p = feed(pipeline(), {**SAVING, "optimizer": {**GAMMA_CALL, "model": "mystery"}},
             {**SAVING, "optimizer": {"model": "gamma", "usage": {"weird": 3}}})
    totals = p.aggregates.month_totals()["2026-10"]
    assert totals["optimizer_spend_usd"] == 0.0 and totals["optimizer_unpriced"] == 2
    assert totals["net_usd_saved"] == totals["usd_saved"] == 0.036
    assert p.aggregates.optimizer_unpriced == {("2026-10", "mystery", "unknown_model"): 1,
                                               ("2026-10", "gamma", "unknown_usage_shape"): 1}
    parsed = samples(Exposition(p.month_of.start).render(p.aggregates, []).decode())
    assert "llm_savings_optimizer_spend_usd_total" not in parsed  # no $0 series for an unpriced model
    tokens = {tuple(sorted(dict(k).items())): v for k, v in parsed["llm_savings_optimizer_tokens_total"].items()}
    assert tokens[tuple(sorted({"month": "2026-10", "model": "mystery", "tenant": "unset", "tier": "fresh"}.items()))] \
        == 2000


def test_optimizer_metrics_by_hand() -> None:
    p = feed(pipeline(), {**SAVING, "tenant": "acme", "optimizer": GAMMA_CALL},
             {**SAVING, "tenant": "acme",
              "optimizer": {"model": "gamma", "usage": anthropic(fresh=10, read=20, out=5)}})
    parsed = samples(Exposition(p.month_of.start).render(p.aggregates, []).decode())
    (labels, spend), = parsed["llm_savings_optimizer_spend_usd_total"].items()
    assert dict(labels) == {"month": "2026-10", "model": "gamma", "tenant": "acme", "price_version": "2026-10-01"}
    assert spend == (2010 * 0.5 + 20 * 0.5 + 105 * 1.5) / 1e6  # gamma has no cache rate: input everywhere
    tiers = {dict(k)["tier"]: v for k, v in parsed["llm_savings_optimizer_tokens_total"].items()}
    assert tiers == {"fresh": 2010, "cache_read": 20, "cache_write_5m": 0, "cache_write_1h": 0, "output": 105}


def test_a_duplicate_pays_its_optimizer_spend_once() -> None:
    p = pipeline()
    line = json.dumps({"request_id": "same", "ts": OCT, **SAVING, "optimizer": GAMMA_CALL}).encode()
    p.ingest_lines([line, line])
    totals = p.aggregates.month_totals()["2026-10"]
    assert totals["duplicates"] == 1 and totals["optimizer_spend_usd"] == 0.00115


def test_bad_optimizer_blocks_are_rejected_with_a_reason_naming_the_field() -> None:
    cases = [
        ("x", "invalid_field", "optimizer has type str, expected an object"),
        ({"usage": {"prompt_tokens": 1}}, "invalid_field", "optimizer.model is missing or not a string"),
        ({"model": "gamma"}, "invalid_usage", "optimizer.usage is missing"),
        ({"model": "gamma", "provider": [1], "usage": {}}, "invalid_field", "optimizer.provider has type list"),
        ({"model": "gamma", "usage": {"prompt_tokens": -1}}, "invalid_count",
         "optimizer.usage.prompt_tokens is negative: -1"),
        ({"model": "gamma", "usage": {"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": 9}}},
         "inconsistent_usage", "optimizer.usage: cached 9"),
    ]
    for block, reason, detail in cases:
        result = parse_line(json.dumps({"ts": OCT, **SAVING, "optimizer": block}).encode())
        assert isinstance(result, Rejection), block
        assert result.reason == reason and result.detail.startswith(detail), (block, result)


def test_an_implausible_optimizer_usage_refuses_the_record() -> None:
    p = feed(pipeline(), {**SAVING, "optimizer": {"model": "gamma", "usage": {"prompt_tokens": 20_000_000}}})
    assert p.aggregates.rejected == {("2026-10", "implausible_count"): 1}
    assert not p.aggregates.optimizer


# --- the float noise of replay --json -----------------------------------------------------------------


def test_month_totals_are_the_nearest_float_to_the_exact_sum() -> None:
    totals = october({"model": "alpha", "usage": anthropic(fresh=100)},
                     {"model": "gamma", "usage": anthropic(fresh=200)})
    naive = 100 * 3.0 / 1e6 + 200 * 0.5 / 1e6  # what summing per-cell floats gives
    assert naive != 0.0004  # 0.00039999999999999996: the noise this test is about
    assert totals["spend_usd"] == 0.0004
    assert json.dumps(totals["spend_usd"]) == "0.0004"


# --- checkpoint ------------------------------------------------------------------------------------------


def test_checkpoint_restores_the_new_tables_exactly() -> None:
    agg = feed(pipeline(), COMPONENTS, {**SAVING, "optimizer": GAMMA_CALL},
               {**SAVING, "optimizer": {**GAMMA_CALL, "model": "mystery"}}).aggregates
    state = json.loads(json.dumps(agg.to_state()))
    restored = Aggregates.from_state(state)
    assert restored.to_state() == agg.to_state()
    assert restored.month_totals() == agg.month_totals()
    assert restored.optimizer_unpriced == agg.optimizer_unpriced


def test_an_old_checkpoint_still_loads() -> None:
    agg = feed(pipeline(), COMPONENTS, SAVING).aggregates
    state = json.loads(json.dumps(agg.to_state()))
    for key in ("optimizer", "optimizer_unpriced"):
        del state[key]
    state["cells"] = [row[:5 + 8] for row in state["cells"]]  # the 8-wide cells: no populations
    state["components"] = [row[:5] + row[6:] for row in state["components"]]  # no rate id
    restored = Aggregates.from_state(state)
    assert restored.components == agg.components  # one rate id per label set: given back exactly
    old = restored.month_totals()["2026-10"]
    new = agg.month_totals()["2026-10"]
    assert old["usd_saved_by_component"] == new["usd_saved_by_component"]
    assert old["baseline_input_tokens"] == 0  # not in the old file: counted from the restart on
    assert {k: v for k, v in old.items() if k not in ("baseline_input_tokens", "sent_input_tokens", "saved_pct",
                                                      "compression_ratio", "populations")} == \
        {k: v for k, v in new.items() if k not in ("baseline_input_tokens", "sent_input_tokens", "saved_pct",
                                                   "compression_ratio", "populations")}
