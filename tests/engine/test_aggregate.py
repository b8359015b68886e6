"""exporter.engine.aggregate on hand-built aggregates: sum order, month retention, merging, checkpoint state.

The pipeline tests reach these through records; here each table is filled directly so that
every one of them, and every field of the rate book's sort key, is checked on its own.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest

from exporter.engine.aggregate import (
    CACHE_READ,
    CELL_WIDTH,
    FRESH,
    OUTPUT,
    REQUESTS,
    SAVED,
    UNKNOWN_MONTH,
    UNPRICED,
    WOULD_SAVE,
    WRITE_1H,
    WRITE_5M,
    Aggregates,
    CellKey,
    ComponentKey,
    OptimizerKey,
    cell_dollars,
)
from exporter.engine.cells import BASE_COMPACTED, BASE_UNTOUCHED, LEGACY_SAVED, SENT_UNTOUCHED
from exporter.engine.gateway import COUNT_KEYS, USD_KEYS
from exporter.prices.table import PricedModel

BASE = PricedModel("v1", "m", "fam", 1.0, 1.0, 1.0, 1.0, 1.0, (("est", 1.0),))
# In floats (0.1 + 0.2) + 0.3 != 0.1 + (0.2 + 0.3): three cells worth $0.1, $0.2 and $0.3 sum to
# another total in another order, so only a fixed summing order gives totals that do not
# depend on the order the records came in.
TENTHS = (1.0, 2.0, 3.0)
assert (0.1 + 0.2) + 0.3 != 0.1 + (0.2 + 0.3)


def cell(**tiers: int) -> list[int]:
    found = [0] * CELL_WIDTH
    for name, value in tiers.items():
        found[globals()[name]] = value
    return found


def build(entries: list[tuple[CellKey, PricedModel | None, list[int]]]) -> Aggregates:
    """Aggregates holding ``entries`` in this order (rate ids follow it, as arrival order does)."""
    agg = Aggregates()
    for key, rates, counts in entries:
        rate = UNPRICED if rates is None else agg.rate_id(rates)
        agg.cells[key._replace(rate_id=rate)] = list(counts)
    return agg


def every_order(entries: list[tuple[CellKey, PricedModel | None, list[int]]]) -> list[dict[str, Any]]:
    return [build(list(order)).month_totals() for order in itertools.permutations(entries)]


KEY = CellKey("2026-11", "m", "t", "est", 0)

# (rate field, tier or figure it moves, the cell's counts): the three entries of each group differ
# in that rate only, so the sort key must use it to fix the order.
GROUPS = [
    ("input", "spend_usd", {"FRESH": 100_000}),
    ("output", "spend_usd", {"OUTPUT": 100_000}),
    ("cache_read", "spend_usd", {"CACHE_READ": 100_000}),
    ("cache_write_5m", "spend_usd", {"WRITE_5M": 100_000}),
    ("cache_write_1h", "spend_usd", {"WRITE_1H": 100_000}),
    ("factors", "usd_saved", {"SAVED": 100_000}),
]


@pytest.mark.parametrize(("field", "figure", "counts"), GROUPS, ids=[group[0] for group in GROUPS])
def test_totals_do_not_depend_on_rate_book_order(field: str, figure: str, counts: dict[str, int]) -> None:
    entries = []
    for value in TENTHS:
        changed: Any = (("est", value),) if field == "factors" else value
        rates = dataclasses.replace(BASE, **{field: changed})
        entries.append((KEY, rates, cell(REQUESTS=1, **counts)))
    totals = every_order(entries)
    assert all(found == totals[0] for found in totals)
    # the case matters: summed in arrival order, two of the orders would disagree
    assert len({sum(t * 0.1 for t in order) for order in itertools.permutations(TENTHS)}) > 1
    assert totals[0]["2026-11"][figure] == pytest.approx(0.6, rel=1e-15)


def test_totals_do_not_depend_on_the_order_of_labels() -> None:
    entries = [
        (KEY._replace(model="a"), BASE, cell(FRESH=300_000)),
        (KEY._replace(tenant="b"), BASE, cell(FRESH=100_000)),
        (KEY._replace(method="c"), BASE, cell(FRESH=200_000)),
        (KEY._replace(model="z"), None, cell(REQUESTS=2, FRESH=5)),
    ]
    totals = every_order(entries)
    assert all(found == totals[0] for found in totals)
    month = totals[0]["2026-11"]
    assert month["spend_usd"] == pytest.approx(0.6, rel=1e-15)
    assert (month["unpriced"], month["requests"], month["fresh_input_tokens"]) == (2, 2, 600_005)


GATEWAY_KEYS = (*COUNT_KEYS, *USD_KEYS)


def test_every_figure_of_month_totals() -> None:
    priced = cell(REQUESTS=3, FRESH=1_000, CACHE_READ=2_000, WRITE_5M=300, WRITE_1H=400, OUTPUT=50,
                  SAVED=700, WOULD_SAVE=90, BASE_COMPACTED=1_000, BASE_UNTOUCHED=200, SENT_UNTOUCHED=200)
    rates = PricedModel("v1", "m", "fam", 2.0, 8.0, 0.5, 2.5, 4.0, (("est", 1.5),))
    agg = build([(KEY, rates, priced), (KEY._replace(model="u", rate_id=UNPRICED), None, cell(REQUESTS=4,
                                                                                             FRESH=10))])
    agg.duplicates["2026-11"] = 5
    agg.rejected[("2026-11", "invalid_json")] = 6
    agg.rejected[("2026-12", "invalid_ts")] = 1
    month = agg.month_totals()["2026-11"]
    usd_saved = 700 * 1.5 * 2.0 / 1e6
    # the figures of issue 16: compacted 1000 -> 300 (700 saved), untouched 200 -> 200
    assert {key: month.pop(key) for key in (
        "baseline_input_tokens", "sent_input_tokens", "saved_pct", "compression_ratio", "populations",
        "optimizer_requests", "optimizer_unpriced", "optimizer_spend_usd", "net_usd_saved",
        "tokens_saved_by_component", "usd_saved_by_component", *GATEWAY_KEYS)} == {
        "baseline_input_tokens": 1_200, "sent_input_tokens": 500,
        "saved_pct": pytest.approx(700 / 1_200, rel=1e-12), "compression_ratio": pytest.approx(1_200 / 500, rel=1e-12),
        "populations": {
            "compacted": {"baseline_input_tokens": 1_000, "sent_input_tokens": 300,
                          "saved_pct": pytest.approx(0.7, rel=1e-12), "compression_ratio": pytest.approx(1_000 / 300)},
            "untouched": {"baseline_input_tokens": 200, "sent_input_tokens": 200, "saved_pct": 0.0,
                          "compression_ratio": 1.0}},
        "optimizer_requests": 0, "optimizer_unpriced": 0, "optimizer_spend_usd": 0.0,
        "net_usd_saved": pytest.approx(usd_saved, rel=1e-12),
        "tokens_saved_by_component": {}, "usd_saved_by_component": {},
        **dict.fromkeys(COUNT_KEYS, 0), **dict.fromkeys(USD_KEYS, 0.0),  # no hits, no routing
    }
    assert month == {
        "requests": 7, "duplicates": 5, "rejected": 6, "unpriced": 4,
        "tokens_saved": 700, "usd_saved": pytest.approx(700 * 1.5 * 2.0 / 1e6, rel=1e-12),
        "would_have_saved_tokens": 90, "would_have_saved_usd": pytest.approx(90 * 1.5 * 2.0 / 1e6, rel=1e-12),
        "fresh_input_tokens": 1_010, "cache_read_tokens": 2_000, "cache_write_tokens": 700, "output_tokens": 50,
        "spend_usd": pytest.approx((1_000 * 2.0 + 2_000 * 0.5 + 300 * 2.5 + 400 * 4.0 + 50 * 8.0) / 1e6, rel=1e-12),
        "cache_savings_usd": pytest.approx((2_000 * 1.5 - 300 * 0.5 - 400 * 2.0) / 1e6, rel=1e-12),
        "cache_hit_rate": 2_000 / (1_010 + 2_000 + 700),
    }
    assert list(agg.month_totals()) == ["2026-11", "2026-12"]
    assert agg.month_totals()["2026-12"]["cache_hit_rate"] == 0.0  # no prompt tokens: no division


# --- month retention ---------------------------------------------------------------------------


def filled(months: tuple[str, ...]) -> Aggregates:
    """One entry per month in every table, so retention is checked table by table."""
    agg = Aggregates()
    rate = agg.rate_id(BASE)
    for month in months:
        agg.cells[CellKey(month, "m", "t", "est", rate)] = cell(REQUESTS=1)
        agg.components[ComponentKey(month, "m", "t", "est", "dedupe")] = 2
        agg.optimizer[OptimizerKey(month, "gamma", "t", rate)] = [1, 2, 0, 0, 0, 3]
        agg.optimizer_unpriced[(month, "gamma", "unknown_model")] = 4  # "gamma" sorts after every month
        agg.unpriced[(month, "m", "unknown_model")] = 3
        agg.divergence[(month, "m", "t", "est")] = [4, 5]
        agg.duplicates[month] = 6
        agg.rejected[(month, "invalid_json")] = 7
        agg.flagged[(month, "no_id")] = 8
    agg.dirty_all = False
    return agg


def month_sets(agg: Aggregates) -> dict[str, set[str]]:
    return {
        "cells": {key.month for key in agg.cells},
        "components": {key.month for key in agg.components},
        "optimizer": {key.month for key in agg.optimizer},
        "optimizer_unpriced": {key[0] for key in agg.optimizer_unpriced},
        "unpriced": {key[0] for key in agg.unpriced},
        "divergence": {key[0] for key in agg.divergence},
        "duplicates": set(agg.duplicates),
        "rejected": {key[0] for key in agg.rejected},
        "flagged": {key[0] for key in agg.flagged},
    }


def test_drop_months_before_keeps_the_month_itself_later_months_and_unknown_in_every_table() -> None:
    agg = filled(("2026-08", "2026-09", "2026-10", UNKNOWN_MONTH))
    assert agg.drop_months_before("2026-09") == 1
    kept = {"2026-09", "2026-10", UNKNOWN_MONTH}
    assert month_sets(agg) == {table: kept for table in month_sets(agg)}
    assert agg.dirty_all
    assert agg.months() == ["2026-09", "2026-10", UNKNOWN_MONTH]
    assert agg.drop_months_before("2026-11") == 2  # 09 and 10; unknown is never dropped
    assert month_sets(agg) == {table: {UNKNOWN_MONTH} for table in month_sets(agg)}


def test_months_come_from_cells_duplicates_and_rejections() -> None:
    agg = Aggregates()
    agg.cells[CellKey("2026-03", "m", "t", "est", UNPRICED)] = cell(REQUESTS=1)
    agg.duplicates["2026-01"] = 1
    agg.rejected[("2026-02", "invalid_json")] = 1
    assert agg.months() == ["2026-01", "2026-02", "2026-03"]


# --- merging parts, and the checkpoint ----------------------------------------------------------


def test_add_sums_every_table_and_renumbers_rates() -> None:
    other_rates = dataclasses.replace(BASE, input=9.0)
    mine, theirs = filled(("2026-10",)), Aggregates()
    their_id = theirs.rate_id(other_rates)
    shared_id = theirs.rate_id(BASE)
    assert (their_id, shared_id) == (0, 1)  # BASE is rate 0 in mine, 1 in theirs
    theirs.cells[CellKey("2026-10", "m", "t", "est", shared_id)] = cell(REQUESTS=2, OUTPUT=3)
    theirs.cells[CellKey("2026-10", "m", "t", "est", their_id)] = cell(REQUESTS=5)
    theirs.cells[CellKey("2026-10", "x", "t", "est", UNPRICED)] = cell(REQUESTS=7)
    theirs.components[ComponentKey("2026-10", "m", "t", "est", "dedupe")] = 10
    theirs.unpriced[("2026-10", "m", "unknown_model")] = 20
    theirs.divergence[("2026-10", "m", "t", "est")] = [30, 40]
    theirs.duplicates["2026-10"] = 50
    theirs.rejected[("2026-10", "invalid_json")] = 60
    theirs.flagged[("2026-10", "no_id")] = 70
    theirs.flagged[("2026-11", "no_id")] = 1
    theirs.newest_ts = 123.5
    mine.add(theirs)
    assert mine.rate_book == [BASE, other_rates]
    assert mine.cells == {
        CellKey("2026-10", "m", "t", "est", 0): cell(REQUESTS=3, OUTPUT=3),
        CellKey("2026-10", "m", "t", "est", 1): cell(REQUESTS=5),
        CellKey("2026-10", "x", "t", "est", UNPRICED): cell(REQUESTS=7),
    }
    assert mine.components == {ComponentKey("2026-10", "m", "t", "est", "dedupe"): 12}
    assert mine.unpriced == {("2026-10", "m", "unknown_model"): 23}
    assert mine.divergence == {("2026-10", "m", "t", "est"): [34, 45]}
    assert mine.duplicates == {"2026-10": 56}
    assert mine.rejected == {("2026-10", "invalid_json"): 67}
    assert mine.flagged == {("2026-10", "no_id"): 78, ("2026-11", "no_id"): 1}
    assert (mine.newest_ts, mine.dirty_all) == (123.5, True)
    theirs.newest_ts = 1.0
    mine.add(theirs)
    assert mine.newest_ts == 123.5


def test_state_round_trip_restores_every_table() -> None:
    agg = filled(("2026-09", UNKNOWN_MONTH))
    agg.rate_id(PricedModel("v2", "n", "", 0.5, 2.0, 0.05, 0.6, 1.0))
    agg.cells[CellKey("2026-09", "n", "t", "provider", 1)] = cell(
        REQUESTS=1, FRESH=2, CACHE_READ=3, WRITE_5M=4, WRITE_1H=5, OUTPUT=6, SAVED=7, WOULD_SAVE=8)
    agg.newest_ts = 1_794_000_000.25
    restored = Aggregates.from_state(agg.to_state())
    for table in ("cells", "components", "unpriced", "divergence", "duplicates", "rejected", "flagged",
                  "rate_book", "newest_ts"):
        assert getattr(restored, table) == getattr(agg, table), table
    assert restored.rate_id(BASE) == 0 and restored.rate_id(agg.rate_book[1]) == 1  # no new entries
    assert restored.month_totals() == agg.month_totals()


def test_state_refuses_a_cell_of_the_wrong_width() -> None:
    state = filled(("2026-09",)).to_state()
    state["cells"][0].append(0)
    with pytest.raises(ValueError, match="wrong width"):
        Aggregates.from_state(state)
    state["cells"][0] = state["cells"][0][:-2]
    with pytest.raises(ValueError, match="wrong width"):
        Aggregates.from_state(state)


def test_state_without_newest_ts_restores_zero() -> None:
    state = filled(("2026-09",)).to_state()
    del state["newest_ts"]
    assert Aggregates.from_state(state).newest_ts == 0.0


def test_tier_indices_are_the_documented_layout() -> None:
    assert tuple(range(8)) == (REQUESTS, FRESH, CACHE_READ, WRITE_5M, WRITE_1H, OUTPUT, SAVED, WOULD_SAVE)
    # the populations of issue 16 follow the eight tiers an 8-wide checkpoint holds
    assert (BASE_COMPACTED, BASE_UNTOUCHED, SENT_UNTOUCHED, LEGACY_SAVED) == (8, 9, 10, 11)
    assert CELL_WIDTH == 12


def test_cell_dollars_splits_the_cache_effect_into_savings_and_premium() -> None:
    # every tier cheaper than input: three savings, summed (not the last one alone)
    cheap = PricedModel("v1", "m", "fam", 2.0, 8.0, 0.5, 1.5, 1.0, (("est", 1.5),))
    found = cell_dollars(cell(CACHE_READ=1_000, WRITE_5M=100, WRITE_1H=10), cheap, "est")
    assert found.cache_read_savings == (1_000 * 1.5 + 100 * 0.5 + 10 * 1.0) / 1e6
    assert (found.cache_write_premium, found.factor, found.factor_source) == (0.0, 1.5, "table")
    # dearer writes: a premium per tier, the read saving apart; net = savings - premium
    dear = PricedModel("v1", "m", "fam", 2.0, 8.0, 0.5, 2.5, 4.0)
    found = cell_dollars(cell(CACHE_READ=1_000, WRITE_5M=100, WRITE_1H=10), dear, "provider")
    assert (found.cache_read_savings, found.cache_write_premium) == (1_500 / 1e6, (100 * 0.5 + 10 * 2.0) / 1e6)
    assert found.cache_net == (1_500 - 70) / 1e6
    assert (found.factor, found.factor_source) == (1.0, "provider")
    # one token a fraction of a dollar-per-million cheaper still counts as a saving
    found = cell_dollars(cell(CACHE_READ=1), PricedModel("v1", "m", "", 0.5, 1.0, 0.25, 0.5, 0.5), "")
    assert (found.cache_read_savings, found.cache_write_premium, found.factor_source) == (0.25 / 1e6, 0.0, "default")
    found = cell_dollars(cell(WRITE_1H=1), PricedModel("v1", "m", "", 0.5, 1.0, 0.5, 0.5, 0.75), "est")
    assert (found.cache_read_savings, found.cache_write_premium) == (0.0, 0.25 / 1e6)
    # no cache tokens: both zero, exactly
    found = cell_dollars(cell(FRESH=10, OUTPUT=5, SAVED=3, WOULD_SAVE=2), cheap, "est")
    assert (found.cache_read_savings, found.cache_write_premium) == (0.0, 0.0)
    assert found.spend == (10 * 2.0 + 5 * 8.0) / 1e6
    assert (found.usd_saved, found.would_have_saved) == (3 * 1.5 * 2.0 / 1e6, 2 * 1.5 * 2.0 / 1e6)


def test_fresh_aggregates_are_empty_dirty_and_at_ts_zero() -> None:
    agg = Aggregates()
    assert (agg.newest_ts, agg.dirty_all, agg.rate_book, agg.months()) == (0.0, True, [], [])
    assert Aggregates.from_state(agg.to_state()).newest_ts == 0.0


def test_add_creates_divergence_pairs_it_did_not_have() -> None:
    mine, theirs = Aggregates(), Aggregates()
    theirs.divergence[("2026-10", "m", "t", "est")] = [30, 40]
    mine.add(theirs)
    assert mine.divergence == {("2026-10", "m", "t", "est"): [30, 40]}
    assert theirs.divergence == {("2026-10", "m", "t", "est"): [30, 40]}  # not shared, not changed


def test_an_old_checkpoints_components_fill_their_cells_savings_in_rate_order() -> None:
    """Components written without a rate id take their label set's cells' savings, rate ids ascending;
    what the cells did not save (a damaged file), a zero row and a label set without cells stay unpriced."""
    agg = Aggregates()
    first, second = agg.rate_id(BASE), agg.rate_id(dataclasses.replace(BASE, input=2.0))
    agg.cells[CellKey("2026-10", "m", "t", "est", second)] = cell(REQUESTS=1, SAVED=3)  # stored before rate 0
    agg.cells[CellKey("2026-10", "m", "t", "est", first)] = cell(REQUESTS=1, SAVED=5)
    agg.cells[CellKey("2026-10", "m", "t", "provider", first)] = cell(REQUESTS=1)  # saved nothing: no capacity
    state = agg.to_state()
    state["components"] = [
        ["2026-10", "m", "t", "est", "dedupe", 4],
        ["2026-10", "m", "t", "est", "trim", 6],  # 1 left under rate 0, then 3 under rate 1, 2 beyond
        ["2026-10", "m", "t", "est", "zero", 0],
        ["2026-10", "m", "t", "provider", "dedupe", 7],
        ["2026-10", "x", "u", "est", "dedupe", 2],
    ]
    restored = Aggregates.from_state(state)
    assert restored.components == {
        ComponentKey("2026-10", "m", "t", "est", "dedupe", first): 4,
        ComponentKey("2026-10", "m", "t", "est", "trim", first): 1,
        ComponentKey("2026-10", "m", "t", "est", "trim", second): 3,
        ComponentKey("2026-10", "m", "t", "est", "trim", UNPRICED): 2,
        ComponentKey("2026-10", "m", "t", "est", "zero", UNPRICED): 0,
        ComponentKey("2026-10", "m", "t", "provider", "dedupe", UNPRICED): 7,
        ComponentKey("2026-10", "x", "u", "est", "dedupe", UNPRICED): 2,
    }
    assert restored.month_totals()["2026-10"]["tokens_saved_by_component"] == {"dedupe": 13, "trim": 6, "zero": 0}
