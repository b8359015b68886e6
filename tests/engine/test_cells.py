"""The per-cell figures of ``engine/cells.py``, by hand: the float dollars /metrics renders, the optimizer's spend
and the populations, each with distinct rates so that no tier can stand in for another."""

from __future__ import annotations

from fractions import Fraction

from exporter.engine import cells as layout
from exporter.engine.cells import (
    CELL_WIDTH,
    OPT_CACHE_READ,
    OPT_FRESH,
    OPT_OUTPUT,
    OPT_WRITE_1H,
    OPT_WRITE_5M,
    OPTIMIZER_WIDTH,
    Populations,
    cell_dollars,
    exact_cell_dollars,
    optimizer_spend,
    populations,
)
from exporter.prices.table import PricedModel

# input 2, output 8, cache read 0.5, 5m write 2.5, 1h write 4 (USD per million): a division in place of a
# product, or one tier's rate for another's, gives another figure.
RATES = PricedModel("v1", "m", "fam", 2.0, 8.0, 0.5, 2.5, 4.0, (("est", 1.5),))


def cell(**tiers: int) -> list[int]:
    found = [0] * CELL_WIDTH
    for name, value in tiers.items():
        found[getattr(layout, name)] = value  # a tier by its name in the cell layout
    return found


def test_spend_prices_every_tier_at_its_own_rate() -> None:
    tiers = cell(FRESH=1_000, CACHE_READ=2_000, WRITE_5M=300, WRITE_1H=400, OUTPUT=50)
    found = cell_dollars(tiers, RATES, "provider")
    assert found.spend == (1_000 * 2.0 + 2_000 * 0.5 + 300 * 2.5 + 400 * 4.0 + 50 * 8.0) / 1e6
    exact = exact_cell_dollars(tiers, RATES, "provider")
    assert exact.spend == Fraction(1_000 * 4 + 2_000 * 1 + 300 * 5 + 400 * 8 + 50 * 16, 2 * 10**6)
    for name, rate in (("CACHE_READ", 0.5), ("WRITE_5M", 2.5), ("WRITE_1H", 4.0), ("FRESH", 2.0), ("OUTPUT", 8.0)):
        assert cell_dollars(cell(**{name: 1_000}), RATES, "provider").spend == 1_000 * rate / 1e6, name


def test_savings_use_the_factor_and_the_input_rate() -> None:
    found = cell_dollars(cell(SAVED=700, WOULD_SAVE=90), RATES, "est")
    assert (found.usd_saved, found.would_have_saved) == (700 * 1.5 * 2.0 / 1e6, 90 * 1.5 * 2.0 / 1e6)
    assert (found.factor, found.factor_source) == (1.5, "table")


def test_optimizer_spend_prices_every_tier_at_its_own_rate() -> None:
    calls = [0] * OPTIMIZER_WIDTH
    calls[OPT_FRESH], calls[OPT_CACHE_READ], calls[OPT_WRITE_5M], calls[OPT_WRITE_1H], calls[OPT_OUTPUT] = (
        1_000, 2_000, 300, 400, 50)
    assert optimizer_spend(calls, RATES) == (1_000 * 2.0 + 2_000 * 0.5 + 300 * 2.5 + 400 * 4.0 + 50 * 8.0) / 1e6
    for index, rate in ((OPT_WRITE_5M, 2.5), (OPT_WRITE_1H, 4.0), (OPT_CACHE_READ, 0.5)):
        one = [0] * OPTIMIZER_WIDTH
        one[index] = 1_000
        assert optimizer_spend(one, RATES) == 1_000 * rate / 1e6, index


def test_populations_of_a_cell_that_brought_a_legacy_saving() -> None:
    # an 8-wide checkpoint's cell saved 300 before populations were counted; since then compacted
    # records of 1000 tokens in all saved 700 more (SAVED holds both): their sent tokens are 1000 - 700
    found = populations(cell(BASE_COMPACTED=1_000, SAVED=1_000, LEGACY_SAVED=300, BASE_UNTOUCHED=200,
                             SENT_UNTOUCHED=190))
    assert found == Populations(1_000, 300, 200, 190)
