"""``cell_dollars`` (unrolled, for speed) gives the very floats of the plain formulas of docs/prices.md."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.engine.cells import (
    CACHE_READ,
    CELL_WIDTH,
    FRESH,
    OUTPUT,
    SAVED,
    WOULD_SAVE,
    WRITE_1H,
    WRITE_5M,
    Dollars,
    cell_dollars,
)
from exporter.prices.table import PER_MILLION, PricedModel


def _plain(cell: list[int], rates: PricedModel, method: str) -> Dollars:
    """The formulas written out plainly, as cell_dollars was before its cache-tier loop was unrolled."""
    factor, factor_source = rates.factor(method or None)
    spend = (cell[FRESH] * rates.input + cell[CACHE_READ] * rates.cache_read + cell[WRITE_5M] * rates.cache_write_5m
             + cell[WRITE_1H] * rates.cache_write_1h + cell[OUTPUT] * rates.output) / PER_MILLION
    savings = premium = 0.0
    for effect in (cell[CACHE_READ] * (rates.input - rates.cache_read),
                   cell[WRITE_5M] * (rates.input - rates.cache_write_5m),
                   cell[WRITE_1H] * (rates.input - rates.cache_write_1h)):
        if effect > 0:
            savings += effect
        elif effect < 0:
            premium -= effect
    saved = cell[SAVED] * factor * rates.input / PER_MILLION
    would = cell[WOULD_SAVE] * factor * rates.input / PER_MILLION
    return Dollars(spend, saved, would, savings / PER_MILLION, premium / PER_MILLION, factor, factor_source)


rates = st.floats(0, 1000, allow_nan=False, allow_infinity=False) | st.sampled_from([0.0, 0.1, 0.125, 1.25, 3.0, 15.0])
tokens = st.integers(0, 10**12) | st.sampled_from([0, 1])


@settings(max_examples=500, deadline=None)
@given(st.lists(tokens, min_size=CELL_WIDTH, max_size=CELL_WIDTH), st.tuples(*[rates] * 5),
       st.sampled_from(["provider", "tiktoken", "", "unknown"]),
       st.floats(0.5, 2.0, allow_nan=False))
def test_cell_dollars_are_the_plain_formulas_bit_for_bit(cell, five, method, factor):
    priced = PricedModel("v", "m", "f", *five, factors=(("tiktoken", factor),))
    got, plain = cell_dollars(cell, priced, method), _plain(cell, priced, method)
    assert type(got) is Dollars
    assert [x.hex() if isinstance(x, float) else x for x in got] == [
        x.hex() if isinstance(x, float) else x for x in plain]
    assert got.cache_net == plain.cache_net
