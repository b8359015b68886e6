"""What one aggregate cell holds and the dollars it is worth: the keys, the layout, the arithmetic.

A cell is a list of integer token sums under one set of frozen rates (a
``PricedModel``). Dollars are derived from it when read, two ways:

- ``cell_dollars``: floats, for /metrics, where a scrape must stay cheap;
- ``exact_cell_dollars``: ``Fraction``s of the rates *as written in the price
  table* (``written``), for the replay JSON, so a month total is the nearest
  float to the exact sum (``0.0048``, not ``0.0048000000000000004``).

Pure arithmetic, no state.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

from exporter.prices.table import PER_MILLION, PROVIDER_METHOD, PricedModel

REQUESTS, FRESH, CACHE_READ, WRITE_5M, WRITE_1H, OUTPUT, SAVED, WOULD_SAVE = range(8)
# Populations of records with savings (compacted: tokens_before > tokens_after): Σ tokens_before of
# compacted records, Σ tokens_before and Σ tokens_after of untouched ones. Sent tokens of compacted
# records are not kept: they are BASE_COMPACTED - (SAVED - LEGACY_SAVED) (``populations``), one add
# less per record. LEGACY_SAVED: the saving a checkpoint of the 8-wide format brought, whose
# populations were not counted.
BASE_COMPACTED, BASE_UNTOUCHED, SENT_UNTOUCHED, LEGACY_SAVED = range(8, 12)
CELL_WIDTH = 12
LEGACY_CELL_WIDTH = 8
# An optimizer cell (the optimizer's own model calls): requests, then the usage tiers.
OPT_REQUESTS, OPT_FRESH, OPT_CACHE_READ, OPT_WRITE_5M, OPT_WRITE_1H, OPT_OUTPUT = range(6)
OPTIMIZER_WIDTH = 6
OPTIMIZER_TIERS = ("fresh", "cache_read", "cache_write_5m", "cache_write_1h", "output")  # OPT_FRESH.. in order
POPULATIONS = ("compacted", "untouched")

UNPRICED = -1
UNKNOWN_MONTH = "unknown"
# The component value of a saving's tier jump (component_usd_saved_total): when the counterfactual falls in a
# dearer prompt tier, every token of the request is billed higher; that part is no component's (``tier_jump``).
TIER_JUMP = "tier_jump"
_MILLION = Fraction(int(PER_MILLION))


class CellKey(NamedTuple):
    """Where a record's token sums go: its labels and the id of the rates it was priced with.

    Built once per route (``Pipeline._route``), so naming the fields costs the
    per-record path nothing; ``rate_id`` indexes ``Aggregates.rate_book`` (``UNPRICED`` when none).
    """

    month: str
    model: str
    tenant: str
    method: str
    rate_id: int


class ComponentKey(NamedTuple):
    """The series of one saving component (``tokens_saved_total``), under the rates it was priced with.

    ``rate_id`` is the saving's cell's, so the component's dollars
    (``component_usd_saved_total``) are its tokens at exactly the rates of
    ``usd_saved_total`` (``saved_rate``; a tier crossing's jump is ``TIER_JUMP``'s, from
    the cell); ``tokens_saved_total`` sums over it.
    """

    month: str
    model: str
    tenant: str
    method: str
    component: str
    rate_id: int = UNPRICED


class OptimizerKey(NamedTuple):
    """Where the optimizer's own usage goes: the optimizer's model, the record's month and tenant."""

    month: str
    model: str
    tenant: str
    rate_id: int


class Dollars(NamedTuple):
    """A cell's dollar figures (a named tuple: built for every changed cell at every scrape)."""

    spend: float
    usd_saved: float
    would_have_saved: float
    cache_read_savings: float  # >= 0 parts of the provider's cache effect
    cache_write_premium: float  # >= 0 parts; net = read savings - premium
    factor: float
    factor_source: str

    @property
    def cache_net(self) -> float:
        return self.cache_read_savings - self.cache_write_premium


_new_tuple = tuple.__new__  # a Dollars from its fields without the named tuple's Python-level __new__


class Populations(NamedTuple):
    """Baseline and sent input tokens of a cell's compacted and untouched records."""

    baseline_compacted: int
    sent_compacted: int
    baseline_untouched: int
    sent_untouched: int


def populations(cell: list[int]) -> Populations:
    """A cell's populations (``BASE_COMPACTED``): a compacted record's sent tokens are its before - saved."""
    compacted = cell[BASE_COMPACTED]
    return Populations(compacted, compacted - cell[SAVED] + cell[LEGACY_SAVED], cell[BASE_UNTOUCHED],
                       cell[SENT_UNTOUCHED])


def cell_dollars(cell: list[int], rates: PricedModel, method: str) -> Dollars:
    """The dollar figures of one cell (docs/prices.md), from its token sums.

    Runs for every changed cell at every scrape and for every priced request of a
    replay: the loop over the cache tiers is unrolled and the tuple built without
    the named tuple's Python ``__new__``; the float operations and their order are
    the same as written out plainly, so the figures are bit-identical.
    """
    factor, factor_source = (1.0, "provider") if method == PROVIDER_METHOD else rates.factor(method or None)
    rate_in = rates.input
    read, write_5m, write_1h = cell[CACHE_READ], cell[WRITE_5M], cell[WRITE_1H]
    spend = (
        cell[FRESH] * rate_in
        + read * rates.cache_read
        + write_5m * rates.cache_write_5m
        + write_1h * rates.cache_write_1h
        + cell[OUTPUT] * rates.output
    ) / PER_MILLION
    # The provider's cache effect per tier; a tier cheaper than input is a saving,
    # dearer a premium, so both counters only ever grow. No tokens in a tier: no effect.
    savings = premium = 0.0
    if read:
        effect = read * (rate_in - rates.cache_read)
        if effect > 0:
            savings += effect
        elif effect < 0:
            premium -= effect
    if write_5m:
        effect = write_5m * (rate_in - rates.cache_write_5m)
        if effect > 0:
            savings += effect
        elif effect < 0:
            premium -= effect
    if write_1h:
        effect = write_1h * (rate_in - rates.cache_write_1h)
        if effect > 0:
            savings += effect
        elif effect < 0:
            premium -= effect
    # no tokens saved: 0.0 as the product would give (rates and factors are finite and >= 0)
    saved = cell[SAVED] * factor * rate_in / PER_MILLION if cell[SAVED] else 0.0
    would = cell[WOULD_SAVE] * factor * rate_in / PER_MILLION if cell[WOULD_SAVE] else 0.0
    if rates.cliff_saved or rates.cliff_would:  # only cells of records whose counterfactual crossed a tier
        usage = _tier_sums(cell)
        actual = _rates(rates)
        if rates.cliff_saved:
            saved += (sum(u * (c - a) for u, c, a in zip(usage, rates.cliff_saved, actual, strict=True))
                      + cell[SAVED] * factor * (rates.cliff_saved[0] - rate_in)) / PER_MILLION
        if rates.cliff_would:
            would += (sum(u * (a - c) for u, c, a in zip(usage, rates.cliff_would, actual, strict=True))
                      - cell[WOULD_SAVE] * factor * (rate_in - rates.cliff_would[0])) / PER_MILLION
    return _new_tuple(Dollars, (spend, saved, would, savings / PER_MILLION, premium / PER_MILLION, factor,
                                factor_source))


def _tier_sums(cell: list[int]) -> tuple[int, int, int, int, int]:
    """A cell's token sums in the order of ``PricedModel``'s rates (input, output, cache_read, writes)."""
    return cell[FRESH], cell[OUTPUT], cell[CACHE_READ], cell[WRITE_5M], cell[WRITE_1H]


def _rates(rates: PricedModel) -> tuple[float, float, float, float, float]:
    return rates.input, rates.output, rates.cache_read, rates.cache_write_5m, rates.cache_write_1h


def cliff_dollars(cell: list[int], rates: PricedModel, method: str) -> tuple[Fraction, Fraction]:
    """What a tier crossing adds to ``usd_saved`` and ``would_have_saved``, exactly (docs/prices.md).

    usd_saved = bill(counterfactual) - bill(actual) = saved x factor x input + this part: the cell's
    tokens at the counterfactual's rates minus the actual's, and the put-back tokens' rate difference.
    """
    usage = _tier_sums(cell)
    actual = [written(rate) for rate in _rates(rates)]
    factor = written(rates.factor(method or None)[0])
    saved = would = Fraction(0)
    if rates.cliff_saved:
        other = [written(rate) for rate in rates.cliff_saved]
        saved = (sum((u * (c - a) for u, c, a in zip(usage, other, actual, strict=True)), Fraction(0))
                 + cell[SAVED] * factor * (other[0] - actual[0])) / _MILLION
    if rates.cliff_would:
        other = [written(rate) for rate in rates.cliff_would]
        would = (sum((u * (a - c) for u, c, a in zip(usage, other, actual, strict=True)), Fraction(0))
                 - cell[WOULD_SAVE] * factor * (actual[0] - other[0])) / _MILLION
    return saved, would


def saved_rate(rates: PricedModel) -> float:
    """The input rate a saved token is worth: the counterfactual's (its marginal rate) when it crossed a tier."""
    return rates.cliff_saved[0] if rates.cliff_saved else rates.input


def tier_jump(cell: list[int], rates: PricedModel) -> float:
    """The part of ``usd_saved`` no component saved: the request's own tokens at the counterfactual's rates
    minus the actual's (0 unless the counterfactual crossed a prompt tier). ``usd_saved`` = saved x factor x
    ``saved_rate`` + this, so the components with ``tier_jump`` add up to it."""
    if not rates.cliff_saved:
        return 0.0
    return sum(u * (c - a) for u, c, a in zip(_tier_sums(cell), rates.cliff_saved, _rates(rates),
                                               strict=True)) / PER_MILLION


def exact_tier_jump(cell: list[int], rates: PricedModel) -> Fraction:
    """``tier_jump``, exactly."""
    if not rates.cliff_saved:
        return Fraction(0)
    return sum((u * (written(c) - written(a)) for u, c, a in zip(_tier_sums(cell), rates.cliff_saved,
                                                                  _rates(rates), strict=True)),
               Fraction(0)) / _MILLION


def optimizer_spend(cell: Sequence[int], rates: PricedModel) -> float:
    """What an optimizer cell's calls cost at list prices (the spend formula, without a factor)."""
    return (cell[OPT_FRESH] * rates.input + cell[OPT_CACHE_READ] * rates.cache_read
            + cell[OPT_WRITE_5M] * rates.cache_write_5m + cell[OPT_WRITE_1H] * rates.cache_write_1h
            + cell[OPT_OUTPUT] * rates.output) / PER_MILLION


# --- exact figures, for output -----------------------------------------------------


@lru_cache(maxsize=4096)
def written(value: float) -> Fraction:
    """The decimal a rate or factor was written as: the shortest one that reads back as this float.

    ``3.0`` -> 3, ``0.3`` -> 3/10 (not the binary 0.29999999999999998889...).
    """
    return Fraction(repr(value))


class ExactDollars(NamedTuple):
    """``cell_dollars`` as exact fractions of the written rates (summed, then rounded once)."""

    spend: Fraction
    usd_saved: Fraction
    would_have_saved: Fraction
    cache_net: Fraction


def exact_cell_dollars(cell: list[int], rates: PricedModel, method: str) -> ExactDollars:
    """The dollar figures of one cell, exactly: integer sums times the table's decimal rates."""
    rate_in, read, w5, w1h = (written(rates.input), written(rates.cache_read), written(rates.cache_write_5m),
                              written(rates.cache_write_1h))
    spend = (cell[FRESH] * rate_in + cell[CACHE_READ] * read + cell[WRITE_5M] * w5 + cell[WRITE_1H] * w1h
             + cell[OUTPUT] * written(rates.output)) / _MILLION
    cache = (cell[CACHE_READ] * (rate_in - read) + cell[WRITE_5M] * (rate_in - w5)
             + cell[WRITE_1H] * (rate_in - w1h)) / _MILLION
    unit = written(rates.factor(method or None)[0]) * rate_in / _MILLION
    if rates.cliff_saved or rates.cliff_would:
        saved, would = cliff_dollars(cell, rates, method)
        return ExactDollars(spend, cell[SAVED] * unit + saved, cell[WOULD_SAVE] * unit + would, cache)
    return ExactDollars(spend, cell[SAVED] * unit, cell[WOULD_SAVE] * unit, cache)


def exact_saved_usd(tokens: int, rates: PricedModel, method: str) -> Fraction:
    """Dollars of ``tokens`` saved under ``method`` (one component's share of ``usd_saved``), exactly: at the
    counterfactual's input rate (``saved_rate``), the tier jump apart (``exact_tier_jump``)."""
    return tokens * written(rates.factor(method or None)[0]) * written(saved_rate(rates)) / _MILLION


def exact_optimizer_spend(cell: Sequence[int], rates: PricedModel) -> Fraction:
    """``optimizer_spend``, exactly."""
    return (cell[OPT_FRESH] * written(rates.input) + cell[OPT_CACHE_READ] * written(rates.cache_read)
            + cell[OPT_WRITE_5M] * written(rates.cache_write_5m)
            + cell[OPT_WRITE_1H] * written(rates.cache_write_1h)
            + cell[OPT_OUTPUT] * written(rates.output)) / _MILLION
