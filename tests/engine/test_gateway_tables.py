"""The gateway tables themselves: the float dollars /metrics reads, adding two parts, the checkpoint.

tests/engine/test_gateway_savings.py holds the month totals to an oracle; these pin what the totals
do not show: the float formulas of the exposition (``bill``, ``routing_dollars``), every key field
of a restored checkpoint, and ``add`` on tables whose keys both parts hold.
"""

from __future__ import annotations

import json
from datetime import datetime
from fractions import Fraction as F
from typing import Any

import pytest

from exporter.engine.aggregate import Aggregates
from exporter.engine.cells import UNPRICED
from exporter.engine.gateway import ROUTE_WIDTH, bill, exact_bill, exact_routing, routing_dollars
from exporter.engine.pipeline import Pipeline
from exporter.prices.table import PricedModel, load_price_table, parse_price_table
from tests.engine.test_arithmetic import PRICES, anthropic
from tests.engine.test_gateway_savings import OCT, run
from tests.prices.test_prices_memo import TABLE

OCT_TS = datetime.fromisoformat(OCT).timestamp()


def rates(model: str) -> PricedModel:
    found = load_price_table(PRICES).lookup(model, OCT_TS, None)
    assert isinstance(found, PricedModel)
    return found


def test_float_bill_is_the_spend_formula() -> None:
    # alpha in October: input 3.0, cache_read 0.3, 5m 3.9, 1h 6.3, output 15.0 per million
    counts = (1_000, 2_000, 300, 400, 50)
    expected = (F(1_000 * 3) + F(2_000) * F("0.3") + F(300) * F("3.9") + F(400) * F("6.3") + F(50 * 15)) / 10**6
    assert bill(counts, rates("alpha")) == pytest.approx(float(expected), rel=1e-12)
    assert exact_bill(counts, rates("alpha")) == expected


def test_bills_refuse_a_cell_of_the_wrong_width() -> None:
    # a truncated cell would bill its first tiers only: a wrong number, so it must raise instead
    with pytest.raises(ValueError):
        bill((1_000, 2_000, 300, 400), rates("alpha"))
    with pytest.raises(ValueError):
        exact_bill((1_000, 2_000, 300, 400), rates("alpha"))


def test_routing_dollars_are_the_exact_ones_as_floats() -> None:
    # requested alpha, called delta: per tier alpha - delta = (1.0, -0.2, 1.9, 4.3, 7.0) per million
    cell = [0] * ROUTE_WIDTH
    cell[0] = 2
    cell[1:6] = [100, 0, 0, 0, 10]  # a record cheaper at delta: 100 * 1.0 + 10 * 7.0 saved
    cell[6:11] = [0, 5_000, 0, 0, 0]  # one dearer at delta (cache reads 0.5 against 0.3): 5_000 * 0.2 extra
    saved, extra = F(170, 10**6), F(1_000, 10**6)
    assert exact_routing(cell, rates("alpha"), rates("delta")) == (saved, extra)
    found = routing_dollars(cell, rates("alpha"), rates("delta"))
    assert found == pytest.approx((float(saved), float(extra)), rel=1e-12)


def test_routing_dollars_without_extra_cost_are_zero_not_negative() -> None:
    cell = [0] * ROUTE_WIDTH
    cell[0], cell[1], cell[5] = 1, 10_000, 1_000  # requested alpha, called gamma: all cheaper
    saved, extra = routing_dollars(cell, rates("alpha"), rates("gamma"))
    assert saved == pytest.approx((10_000 * 2.5 + 1_000 * 13.5) / 1e6, rel=1e-12)
    assert extra == 0.0


# records whose gateway keys (model, tenant, kind; requested and called; unpriced reasons) each occur
# in both halves of the split below, so adding the halves sums cells instead of copying them
LOG: list[dict[str, Any]] = [
    {"request_id": "h1", "model": "alpha", "tenant": "t1", "response_cache": "exact",
     "usage": anthropic(fresh=1000, read=2000, w5=300, w1h=400, out=50)},
    {"request_id": "h2", "model": "alpha", "tenant": "t1", "response_cache": "exact",
     "usage": anthropic(fresh=7, read=11, w5=13, w1h=17, out=19)},
    {"request_id": "h3", "model": "alpha", "response_cache": "semantic"},  # no usage: unpriced
    {"request_id": "h4", "model": "alpha", "response_cache": "semantic"},
    {"request_id": "r1", "model": "gamma", "tenant": "t2", "requested_model": "alpha",
     "usage": anthropic(fresh=10_000, out=1_000)},
    {"request_id": "r2", "model": "gamma", "tenant": "t2", "requested_model": "alpha",
     "usage": anthropic(fresh=3, read=5, out=2)},
    {"request_id": "r3", "model": "gamma", "requested_model": "epsilon", "usage": anthropic(fresh=1)},
    {"request_id": "r4", "model": "gamma", "requested_model": "epsilon", "usage": anthropic(fresh=2)},
]


def resolved(agg: Aggregates) -> dict[str, Any]:
    """The gateway tables with rate ids replaced by the rates they name (ids depend on arrival order)."""
    book = agg.rate_book

    def rate(rate_id: int) -> Any:
        return book[rate_id] if rate_id >= 0 else rate_id

    gateway = agg.gateway
    return {
        "hits": {(*key[:4], rate(key.rate_id)): cell for key, cell in gateway.hits.items()},
        "routed": {(*key[:4], rate(key.requested_rate_id), rate(key.rate_id)): cell
                   for key, cell in gateway.routed.items()},
        "hits_unpriced": gateway.hits_unpriced,
        "routed_unpriced": gateway.routed_unpriced,
    }


def test_adding_two_parts_gives_the_whole_tables() -> None:
    whole = run(LOG).aggregates
    first, second = run(LOG[0::2]).aggregates, run(LOG[1::2]).aggregates
    assert second.gateway.hits and second.gateway.routed  # the part added holds every kind of entry
    first.add(second)
    assert resolved(first) == resolved(whole)
    assert resolved(first)["hits_unpriced"] == {("2026-10", "alpha", "semantic", "unknown_usage"): 2}


def test_a_restored_checkpoint_holds_the_same_tables() -> None:
    agg = run(LOG).aggregates
    restored = Aggregates.from_state(agg.to_state())
    assert restored.rate_book == agg.rate_book
    for name in ("hits", "routed", "hits_unpriced", "routed_unpriced"):
        assert getattr(restored.gateway, name) == getattr(agg.gateway, name), name
    assert {key.tenant for key in restored.gateway.hits} == {"t1", "unset"}


def test_a_hit_is_billed_at_its_prompt_tier_and_service_tier() -> None:
    pipeline = Pipeline(parse_price_table(TABLE, "memo.yaml"))
    pipeline.ingest_lines([json.dumps({"ts": "2025-06-15T12:00:00Z", **r}).encode() for r in (
        # above 200,000 prompt tokens gem bills input 2.5 and output 15 on the whole request
        {"request_id": "big", "model": "gem", "response_cache": "exact", "usage": anthropic(fresh=300_000, out=1_000)},
        # batch: half the base rates (1.25 and 10.0)
        {"request_id": "batch", "model": "gem", "response_cache": "exact", "service_tier": "batch",
         "usage": anthropic(fresh=1_000, out=100)},
    )])
    totals = pipeline.aggregates.month_totals()["2025-06"]
    expected = (F(300_000) * F("2.5") + F(1_000 * 15) + F(1_000) * F("0.625") + F(100 * 5)) / 10**6
    assert totals["response_cache_avoided_usd"] == float(expected)


def test_a_routed_request_prices_the_requested_model_at_its_prompt_tier_and_service_tier() -> None:
    pipeline = Pipeline(parse_price_table(TABLE, "memo.yaml"))
    pipeline.ingest_lines([json.dumps(
        {"ts": "2025-06-15T12:00:00Z", "request_id": "r", "model": "gpt", "requested_model": "gem",
         "service_tier": "batch", "usage": anthropic(fresh=300_000, out=1_000)}).encode()])
    totals = pipeline.aggregates.month_totals()["2025-06"]
    # gem in batch above 200,000 prompt tokens: half of (2.5, 15.0); gpt in batch: half of (1.25, 10.0)
    expected = (F(300_000) * (F("1.25") - F("0.625")) + F(1_000) * (F("7.5") - F(5))) / 10**6
    assert totals["routing_savings_usd"] == float(expected)
    assert totals["routing_extra_cost_usd"] == 0.0


def test_hit_and_route_keys_name_the_tables_model_and_its_rates() -> None:
    agg = run([
        {"request_id": "a", "model": "alpha-2026-09", "response_cache": "exact", "usage": anthropic(fresh=10)},
        {"request_id": "b", "model": "alpha", "response_cache": "exact"},  # no usage: unpriced, no rate id
        # zeta is reached through its provider, for the requested model too
        {"request_id": "c", "model": "gamma", "provider": "vendor", "requested_model": "zeta",
         "usage": anthropic(fresh=1_000)},
    ]).aggregates
    hits = {(key.model, key.rate_id == UNPRICED) for key in agg.gateway.hits}
    assert hits == {("alpha", False), ("alpha", True)}  # the alias is labelled by the table's name
    (route,) = agg.gateway.routed
    assert route.requested_rate_id != UNPRICED and agg.rate_book[route.requested_rate_id].model == "vendor/zeta"
