"""Hypothesis properties of saved %, the compression ratio, dollars by component and net savings.

The price table starts a new version in the middle of January with other
rates, so one label set (month, model, tenant, method) holds cells under two
rate ids: the case where components must keep their cell's rates to be priced
like ``usd_saved``.
"""

from __future__ import annotations

import functools
import json
from fractions import Fraction
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.engine.aggregate import Aggregates
from exporter.engine.cells import UNPRICED, exact_cell_dollars, exact_optimizer_spend, exact_saved_usd
from exporter.engine.fastparse import fast_parse
from exporter.engine.pipeline import Pipeline
from exporter.engine.records import MAX_EPOCH_SECONDS, Record, parse_object, parse_ts
from exporter.exposition.render import Exposition
from exporter.prices.table import PriceTable, parse_price_table
from tests.support.processes import samples

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TABLE = """\
schema: llm-savings-prices/v1
versions:
  - version: "v1"
    effective_from: "2026-01-01T00:00:00Z"
    families:
      premium:
        cache_write_5m_multiplier: 1.25
        billed_token_factor: {"tiktoken:o200k_base": 1.37, "estimate:chars/4": 1.1}
    models:
      alpha: {family: premium, input: 3.0, output: 15.0, cache_read: 0.3}
      gamma: {input: 0.7, output: 2.1}
  - version: "v2"
    effective_from: "2026-01-15T00:00:00Z"
    families:
      premium:
        cache_write_5m_multiplier: 1.25
        billed_token_factor: {"tiktoken:o200k_base": 1.21}
    models:
      alpha: {family: premium, input: 2.9, output: 14.5, cache_read: 0.29}
      gamma: {input: 0.65, output: 2.2}
"""
TIMES = ["2026-01-03T10:00:00Z", "2026-01-14T23:59:59Z", "2026-01-15T00:00:00Z", "2026-01-30T08:00:00Z",
         "2026-02-02T00:00:00Z"]


@functools.cache
def table() -> PriceTable:
    return parse_price_table(TABLE, "properties.yaml")


counts = st.integers(0, 50_000)
usage = st.one_of(
    st.builds(lambda p, c, d: {"prompt_tokens": p + d, "completion_tokens": c,
                               "prompt_tokens_details": {"cached_tokens": d}}, counts, counts, counts),
    st.builds(lambda i, r, w, o: {"input_tokens": i, "cache_read_input_tokens": r, "cache_creation_input_tokens": w,
                                  "output_tokens": o}, counts, counts, counts, counts),
    st.just({"unknown_shape": 1}),
)
optimizer = st.fixed_dictionaries({"model": st.sampled_from(["alpha", "gamma", "mystery"]), "usage": usage})


@st.composite
def record(draw: st.DrawFn, shrink_only: bool = False) -> dict[str, Any]:
    """A record with savings (``shrink_only``: tokens_after <= tokens_before), maybe components and optimizer."""
    before = draw(counts)
    after = draw(st.integers(0, before)) if shrink_only else draw(counts)
    out: dict[str, Any] = {
        "ts": draw(st.sampled_from(TIMES)), "model": draw(st.sampled_from(["alpha", "gamma", "mystery"])),
        "tenant": draw(st.sampled_from(["a", "b", None])),
        "count_method": draw(st.sampled_from(["provider", "tiktoken:o200k_base", "estimate:chars/4", None])),
        "tokens_before": before, "tokens_after": after,
    }
    if draw(st.booleans()):
        out["components"] = draw(st.lists(st.fixed_dictionaries(
            {"name": st.sampled_from(["history", "tools", "rag"]), "tokens_saved": st.integers(0, 20_000)}),
            max_size=3))
    if draw(st.booleans()):
        out["optimizer"] = draw(optimizer)
    if draw(st.booleans()):
        out["usage"] = draw(usage)
    return out


def lines_of(records: list[dict[str, Any]]) -> list[bytes]:
    return [json.dumps({"request_id": f"r{index}", **body}).encode() for index, body in enumerate(records)]


def counted(lines: list[bytes]) -> Pipeline:
    p = Pipeline(table())
    p.ingest_lines(lines)
    return p


def exact_by_month(agg: Aggregates) -> dict[str, tuple[Fraction, Fraction, Fraction]]:
    """month -> (usd_saved from the cells, the same from the components, optimizer spend), all exact."""
    out: dict[str, list[Fraction]] = {}
    for key, cell, rates in agg.priced_cells():
        if rates is not None:
            out.setdefault(key.month, [Fraction(0)] * 3)[0] += exact_cell_dollars(cell, rates, key.method).usd_saved
    for comp, tokens in agg.components.items():
        if comp.rate_id != UNPRICED:
            out.setdefault(comp.month, [Fraction(0)] * 3)[1] += exact_saved_usd(
                tokens, agg.rate_book[comp.rate_id], comp.method)
    for opt, opt_cell in agg.optimizer.items():
        if opt.rate_id != UNPRICED:
            rates = agg.rate_book[opt.rate_id]
            out.setdefault(opt.month, [Fraction(0)] * 3)[2] += exact_optimizer_spend(opt_cell, rates)
    return {month: (a, b, c) for month, (a, b, c) in out.items()}


@SETTINGS
@given(st.lists(record(shrink_only=True), max_size=25))
def test_saved_pct_is_a_share_when_nothing_grows(records: list[dict[str, Any]]) -> None:
    for totals in counted(lines_of(records)).aggregates.month_totals().values():
        compacted = totals["populations"]["compacted"]
        for share in (totals["saved_pct"], compacted["saved_pct"]):
            assert share is None or 0.0 <= share <= 1.0
        assert totals["populations"]["untouched"]["saved_pct"] in (0.0, None)
        assert totals["compression_ratio"] is None or totals["compression_ratio"] >= 1.0
        # only compacted records save, and they save exactly baseline - sent
        assert totals["tokens_saved"] == compacted["baseline_input_tokens"] - compacted["sent_input_tokens"]


@SETTINGS
@given(st.lists(record(), max_size=25))
def test_components_dollars_sum_to_usd_saved(records: list[dict[str, Any]]) -> None:
    agg = counted(lines_of(records)).aggregates
    for month, (from_cells, from_components, _spend) in exact_by_month(agg).items():
        assert from_components == from_cells, month  # exactly, as fractions
    for totals in agg.month_totals().values():
        assert sum(totals["tokens_saved_by_component"].values()) == totals["tokens_saved"]
        # each component is its own nearest float: their float sum is the total to rounding only
        assert abs(sum(totals["usd_saved_by_component"].values()) - totals["usd_saved"]) <= 1e-12 * max(
            1.0, totals["usd_saved"])


@SETTINGS
@given(record())
def test_one_records_components_sum_to_its_usd_saved(body: dict[str, Any]) -> None:
    totals = next(iter(counted(lines_of([body])).aggregates.month_totals().values()))
    assert abs(sum(totals["usd_saved_by_component"].values()) - totals["usd_saved"]) <= 1e-15


@SETTINGS
@given(st.lists(record(), max_size=25))
def test_metrics_components_sum_to_each_usd_saved_series(records: list[dict[str, Any]]) -> None:
    p = counted(lines_of(records))
    parsed = samples(Exposition(p.month_of.start).render(p.aggregates, []).decode())
    by_provenance: dict[tuple[Any, ...], float] = {}
    for key, value in parsed.get("llm_savings_component_usd_saved_total", {}).items():
        labels = tuple(pair for pair in key if pair[0] != "component")
        by_provenance[labels] = by_provenance.get(labels, 0.0) + value
    saved = parsed.get("llm_savings_usd_saved_total", {})
    assert set(by_provenance) <= set(saved)
    for labels, value in saved.items():  # (a saving of 0 split over components of 0 leaves no component series)
        assert abs(by_provenance.get(labels, 0.0) - value) <= 1e-12 * max(1.0, value)


@SETTINGS
@given(st.lists(record(), max_size=25), st.data())
def test_new_totals_do_not_depend_on_record_order(records: list[dict[str, Any]], data: st.DataObject) -> None:
    lines = lines_of(records)
    shuffled = data.draw(st.permutations(lines))
    assert counted(shuffled).aggregates.month_totals() == counted(lines).aggregates.month_totals()  # exactly


@SETTINGS
@given(st.lists(record(), max_size=25), st.integers(0, 25))
def test_parts_added_equal_one_pass(records: list[dict[str, Any]], cut: int) -> None:
    lines = lines_of(records)
    whole = counted(lines).aggregates
    first, second = counted(lines[:cut]).aggregates, counted(lines[cut:]).aggregates
    first.add(second)
    assert first.month_totals() == whole.month_totals()
    assert exact_by_month(first) == exact_by_month(whole)


@SETTINGS
@given(st.lists(record(), max_size=25))
def test_checkpoint_round_trip(records: list[dict[str, Any]]) -> None:
    agg = counted(lines_of(records)).aggregates
    restored = Aggregates.from_state(json.loads(json.dumps(agg.to_state())))
    assert restored.to_state() == agg.to_state()
    assert restored.month_totals() == agg.month_totals()


@SETTINGS
@given(st.lists(record(), max_size=25))
def test_an_old_checkpoint_keeps_every_total(records: list[dict[str, Any]]) -> None:
    """A checkpoint of the format before rate ids on components: tokens by component and the dollar
    totals come back exactly; across a mid-month price change only the split by component is a guess."""
    agg = counted(lines_of(records)).aggregates
    state = json.loads(json.dumps(agg.to_state()))
    for key in ("optimizer", "optimizer_unpriced"):
        del state[key]
    state["cells"] = [row[:5 + 8] for row in state["cells"]]  # the 8-wide cells: no populations
    state["components"] = [row[:5] + row[6:] for row in state["components"]]
    restored = Aggregates.from_state(state)
    for month, (from_cells, from_components, _spend) in exact_by_month(restored).items():
        assert from_components == from_cells, month
    old, new = restored.month_totals(), agg.month_totals()
    for month, totals in new.items():
        assert old[month]["tokens_saved_by_component"] == totals["tokens_saved_by_component"]
        assert old[month]["usd_saved"] == totals["usd_saved"]
        assert old[month]["optimizer_spend_usd"] == 0.0  # not in the old format


@SETTINGS
@given(st.lists(record(), max_size=25))
def test_net_savings_is_usd_saved_less_optimizer_spend(records: list[dict[str, Any]]) -> None:
    agg = counted(lines_of(records)).aggregates
    exact = exact_by_month(agg)
    for month, totals in agg.month_totals().items():
        saved, _components, spend = exact.get(month, (Fraction(0), Fraction(0), Fraction(0)))
        assert totals["optimizer_spend_usd"] == float(spend)
        assert totals["net_usd_saved"] == float(saved - spend)


# --- the fast path and the reference agree on the optimizer block ----------------------------------------

loose_counts = st.one_of(counts, st.sampled_from([-1, 1.5, True, None, "3", 2**53]))
any_optimizer = st.one_of(
    optimizer,
    st.none(), st.integers(), st.text(max_size=3),
    st.fixed_dictionaries({}, optional={
        "model": st.one_of(st.sampled_from(["gamma", ""]), st.integers(), st.none()),
        "provider": st.one_of(st.none(), st.text(max_size=4), st.integers(0, 9), st.lists(st.integers(), max_size=1)),
        "usage": st.one_of(usage, st.none(), st.integers(),
                           st.fixed_dictionaries({"prompt_tokens": loose_counts},
                                                 optional={"completion_tokens": loose_counts,
                                                           "prompt_tokens_details": st.fixed_dictionaries(
                                                               {"cached_tokens": loose_counts})})),
    }),
)


@settings(max_examples=800, deadline=None)
@given(record(), any_optimizer)
def test_fast_path_equals_reference_on_the_optimizer_block(body: dict[str, Any], block: Any) -> None:
    line = json.dumps({"request_id": "r", **body, "optimizer": block}).encode()
    fast = fast_parse(line, Record, parse_ts, MAX_EPOCH_SECONDS)
    reference = parse_object(orjson.loads(line))
    if fast is not None:
        assert fast == reference
    if isinstance(block, dict) and block.get("model") == "gamma" and block.get("usage") in (
            {"prompt_tokens": 10}, {"unknown_shape": 1}) and not isinstance(block.get("provider"), list):
        # ordinary blocks take the fast path (a list as provider is refused: the reference names it)
        assert fast is not None


def test_the_fast_path_takes_an_ordinary_optimizer_block() -> None:
    for block in ({"model": "gamma", "usage": {"prompt_tokens": 10, "completion_tokens": 2}},
                  {"model": "gamma", "provider": "openai", "usage": {"input_tokens": 3, "output_tokens": 1}},
                  {"model": "gamma", "usage": {"unknown_shape": 1}}):
        line = json.dumps({"ts": TIMES[0], "model": "alpha", "optimizer": block}).encode()
        fast = fast_parse(line, Record, parse_ts, MAX_EPOCH_SECONDS)
        assert fast is not None and fast == parse_object(orjson.loads(line))
        assert fast.optimizer is not None and fast.optimizer.model == "gamma"
