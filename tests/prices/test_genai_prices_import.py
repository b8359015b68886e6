"""The genai-prices conversion on generated price sets: whole-request tiers per kind, fallbacks, text.

Hypothesis builds genai-prices ``ModelPrice`` objects (the real type) with any subset of the five
token kinds, each flat or tiered at its own thresholds; the converted model, loaded by the real
v2 loader, bills every generated request exactly as genai-prices' ``ModelPrice.calc_price``.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from genai_prices import Usage
from genai_prices.types import ModelPrice, Tier, TieredPrices
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.prices.importers.genai_prices import ModelState, model_line, rate_set
from exporter.prices.importers.genai_rules import clause_literals
from exporter.prices.table import PricedModel, parse_price_table
from exporter.prices.tiers import UsageTiers, bill

THRESHOLDS = (1_000, 32_000, 128_000, 199_999, 200_000, 272_000)
rates = st.integers(min_value=0, max_value=80_000).map(lambda n: Decimal(n) / 1000)


@st.composite
def prices(draw: st.DrawFn) -> TieredPrices | Decimal:
    base = draw(rates)
    starts = draw(st.lists(st.sampled_from(THRESHOLDS), max_size=2, unique=True))
    if not starts:
        return base
    return TieredPrices(base=base, tiers=[Tier(start=s, price=draw(rates)) for s in starts])


@st.composite
def model_prices(draw: st.DrawFn) -> dict[str, TieredPrices | Decimal]:
    found = {"input_mtok": draw(prices())}
    for key in ("output_mtok", "cache_read_mtok", "cache_write_mtok", "cache_write_1h_mtok"):
        # genai-prices refuses a 1h write price without the generic write price (its ancestor)
        if draw(st.booleans()) and (key != "cache_write_1h_mtok" or "cache_write_mtok" in found):
            found[key] = draw(prices())
    return found


usages = st.tuples(*(st.integers(min_value=0, max_value=150_000) for _ in range(4)),
                   st.integers(min_value=0, max_value=50_000)).map(lambda t: UsageTiers(*t))


def _table(state: ModelState) -> str:
    return ("schema: llm-savings-prices/v2\nversions:\n  - version: \"v\"\n"
            "    effective_from: \"2025-01-01T00:00:00Z\"\n    families: {\"p\": {}}\n    models:\n"
            + model_line("p/m", "p", state, ["m"]) + "\n")


@settings(max_examples=300, deadline=None)
@given(model_prices(), st.lists(usages, min_size=1, max_size=8))
def test_converted_model_bills_as_genai_prices(found, requests):
    table = parse_price_table(_table(ModelState(rate_set(found), (), ())), "<gen>")
    for usage in requests:
        priced = table.lookup("m", 1.8e9, prompt_tokens=usage.prompt)
        assert isinstance(priced, PricedModel)
        theirs = ModelPrice(**found).calc_price(Usage(
            input_tokens=usage.prompt, cache_read_tokens=usage.cache_read,
            cache_write_tokens=usage.cache_write_5m + usage.cache_write_1h,
            cache_write_1h_tokens=usage.cache_write_1h, output_tokens=usage.output))["total_price"]
        assert bill(usage, priced) == Fraction(theirs), (found, usage, priced)


def test_thresholds_of_every_kind_become_tiers_listing_all_rates():
    found = {"input_mtok": TieredPrices(base=Decimal(1), tiers=[Tier(start=200_000, price=Decimal(2))]),
             "output_mtok": TieredPrices(base=Decimal(5), tiers=[Tier(start=128_000, price=Decimal(7))])}
    converted = rate_set(found)
    assert [t.above for t in converted.tiers] == [128_000, 200_000]
    # above 128k only output changed; above 200k both; unlisted cache kinds follow input
    assert converted.tiers[0].rates == (Decimal(1), Decimal(7), Decimal(1), Decimal(1), Decimal(1))
    assert converted.tiers[1].rates == (Decimal(2), Decimal(7), Decimal(2), Decimal(2), Decimal(2))


def test_rule_literals_are_collected_through_and_or():
    from genai_prices.types import ClauseAnd, ClauseEquals, ClauseOr, ClauseRegex, ClauseStartsWith

    rule = ClauseOr(or_=[ClauseEquals(equals="a-1"),
                         ClauseAnd(and_=[ClauseStartsWith(starts_with="b"), ClauseRegex(regex="^b-[0-9]+$")])])
    assert sorted(clause_literals(rule)) == ["a-1", "b"]
