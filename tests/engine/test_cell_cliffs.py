"""A cell whose counterfactual crossed a prompt tier (``cliff_saved``, ``cliff_would``), by hand.

The replay tests reach these cells with a factor of 1 and with one cliff at a time; here both cliffs
ride on one cell, the count method has a factor of 1.5, every tier holds tokens and every rate
differs, so a dropped factor, a swapped sign or a rate of the wrong tier gives another figure. The
expected figures are written out with Fractions from docs/prices.md's formulas, not from engine code.
"""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from exporter.engine import cells as layout
from exporter.engine.cells import CELL_WIDTH, cell_dollars, cliff_dollars, exact_tier_jump, tier_jump
from exporter.prices.table import PricedModel

# input 2, output 8, cache read 0.5, 5m write 2.5, 1h write 4 per million; the counterfactuals' rates in
# the same field order (input, output, cache_read, 5m, 1h): a dearer tier for the saving put back, a
# cheaper one for the would-have-saved taken off
ACTUAL = (F(2), F(8), F(1, 2), F(5, 2), F(4))
SAVED_AT = (F(4), F(12), F(1), F(5), F(6))
WOULD_AT = (F(1, 2), F(6), F(1, 4), F(5, 4), F(3))
FACTOR = F(3, 2)
RATES = PricedModel("v1", "m", "fam", 2.0, 8.0, 0.5, 2.5, 4.0, (("est", 1.5),),
                    cliff_saved=tuple(map(float, SAVED_AT)), cliff_would=tuple(map(float, WOULD_AT)))
PLAIN = PricedModel("v1", "m", "fam", 2.0, 8.0, 0.5, 2.5, 4.0, (("est", 1.5),))
# the cell's tokens in the rates' field order, and its saved and would-have-saved tokens
USAGE = (1_000, 50, 2_000, 300, 400)
SAVED, WOULD = 700, 90


def cell() -> list[int]:
    found = [0] * CELL_WIDTH
    for name, value in zip(("FRESH", "OUTPUT", "CACHE_READ", "WRITE_5M", "WRITE_1H"), USAGE, strict=True):
        found[getattr(layout, name)] = value
    found[layout.SAVED], found[layout.WOULD_SAVE] = SAVED, WOULD
    return found


def jump(other: tuple[F, ...]) -> F:
    """The cell's own tokens at ``other``'s rates less at the actual ones."""
    return sum((u * (o - a) for u, o, a in zip(USAGE, other, ACTUAL, strict=True)), F(0))


# usd_saved: the saving put back as input at the counterfactual's rates, plus its own tokens' jump
CLIFF_SAVED = (jump(SAVED_AT) + SAVED * FACTOR * (SAVED_AT[0] - ACTUAL[0])) / 10**6
# would_have_saved: its own tokens' drop, less the would-have-saved tokens' input rate difference
CLIFF_WOULD = (-jump(WOULD_AT) - WOULD * FACTOR * (ACTUAL[0] - WOULD_AT[0])) / 10**6


def test_exact_cliffs_use_the_methods_factor() -> None:
    assert cliff_dollars(cell(), RATES, "est") == (CLIFF_SAVED, CLIFF_WOULD)
    # the default factor (1.0) for a method the family does not list
    unlisted = ((jump(SAVED_AT) + SAVED * (SAVED_AT[0] - ACTUAL[0])) / 10**6,
                (-jump(WOULD_AT) - WOULD * (ACTUAL[0] - WOULD_AT[0])) / 10**6)
    assert cliff_dollars(cell(), RATES, "other") == unlisted
    # a cliff the record did not cross adds nothing
    assert cliff_dollars(cell(), PLAIN, "est") == (0, 0)
    only_saved = PricedModel("v1", "m", "fam", 2.0, 8.0, 0.5, 2.5, 4.0, (("est", 1.5),),
                             cliff_saved=RATES.cliff_saved)
    assert cliff_dollars(cell(), only_saved, "est") == (CLIFF_SAVED, 0)


def test_float_cell_dollars_add_both_cliffs() -> None:
    found = cell_dollars(cell(), RATES, "est")
    usd_saved = SAVED * FACTOR * ACTUAL[0] / 10**6 + CLIFF_SAVED
    would = WOULD * FACTOR * ACTUAL[0] / 10**6 + CLIFF_WOULD
    assert found.usd_saved == pytest.approx(float(usd_saved), rel=1e-12)
    assert found.would_have_saved == pytest.approx(float(would), rel=1e-12)
    # without cliffs the same cell has the plain figures
    plain = cell_dollars(cell(), PLAIN, "est")
    assert plain.would_have_saved == pytest.approx(float(WOULD * FACTOR * ACTUAL[0] / 10**6), rel=1e-12)


def test_tier_jump_is_the_own_tokens_jump() -> None:
    assert tier_jump(cell(), RATES) == pytest.approx(float(jump(SAVED_AT) / 10**6), rel=1e-12)
    assert exact_tier_jump(cell(), RATES) == jump(SAVED_AT) / 10**6
    assert tier_jump(cell(), PLAIN) == 0.0
    assert exact_tier_jump(cell(), PLAIN) == 0
