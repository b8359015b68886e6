"""Series derived from the aggregates' side tables: components and the optimizer's spend.

Pure functions of a frame's copies (``render.Frame``), each returning a series
per label tuple in first-seen order (dict order), so the exposition is the same
in every process for the same input:

- ``tokens_saved_total`` sums a component's tokens over the rate ids it was
  priced under; ``component_usd_saved_total`` prices each part at its rates,
  exactly as ``usd_saved_total`` prices the cell's saving (float per part, so
  the components add up to ``usd_saved_total`` to float rounding). A saving
  whose counterfactual crossed a prompt tier prices its tokens at the
  counterfactual's input rate; the jump (``tier_jump``) comes from the cells
  (``render.Exposition``) and is added by ``add_tier_jumps``;
- the optimizer's tokens by tier and its spend at list prices.
"""

from __future__ import annotations

from collections.abc import Mapping

from exporter.engine.aggregate import ComponentKey, OptimizerKey
from exporter.engine.cells import OPT_FRESH, OPTIMIZER_TIERS, UNPRICED, optimizer_spend, saved_rate
from exporter.prices.table import PER_MILLION, PricedModel

Labels = tuple[str, ...]


def _add(table: dict[Labels, float | int], labels: Labels, value: float | int) -> None:
    table[labels] = table.get(labels, 0) + value


def component_tokens(components: Mapping[ComponentKey, int]) -> dict[Labels, float | int]:
    """``tokens_saved_total``: (month, model, tenant, component, method) -> tokens, over every rate id."""
    out: dict[Labels, float | int] = {}
    for key, tokens in components.items():
        _add(out, (key.month, key.model, key.tenant, key.component, key.method), tokens)
    return out


def component_dollars(components: Mapping[ComponentKey, int],
                      rate_book: list[PricedModel]) -> dict[Labels, float | int]:
    """``component_usd_saved_total``: the priced components' tokens at their cell's rates and factor."""
    out: dict[Labels, float | int] = {}
    # (rate id, method) -> (factor, input rate, version, factor source): looked up once per scrape
    pricing: dict[tuple[int, str], tuple[float, float, str, str]] = {}
    for key, tokens in components.items():
        if key.rate_id == UNPRICED or not key.method:
            continue
        found = pricing.get((key.rate_id, key.method))
        if found is None:
            rates = rate_book[key.rate_id]
            factor, source = rates.factor(key.method)
            found = pricing[(key.rate_id, key.method)] = (factor, saved_rate(rates), rates.version, source)
        factor, rate, version, source = found
        # the arithmetic of usd_saved_total (cells.cell_dollars), so the floats agree with it
        _add(out, (key.month, key.model, key.tenant, key.component, key.method, version, source),
             tokens * factor * rate / PER_MILLION)
    return out


def add_tier_jumps(dollars: dict[Labels, float | int],
                   jumps: Mapping[Labels, float | int]) -> dict[Labels, float | int]:
    """``component_dollars`` with the cells' tier jumps (component ``tier_jump``, same labels) added in."""
    for labels, value in jumps.items():
        _add(dollars, labels, value)
    return dollars


def optimizer_tokens(optimizer: Mapping[OptimizerKey, tuple[int, ...]]) -> dict[Labels, float | int]:
    """``optimizer_tokens_total``: (month, model, tenant, tier) -> tokens, priced or not."""
    out: dict[Labels, float | int] = {}
    for key, cell in optimizer.items():
        for offset, tier in enumerate(OPTIMIZER_TIERS):
            _add(out, (key.month, key.model, key.tenant, tier), cell[OPT_FRESH + offset])
    return out


def optimizer_dollars(optimizer: Mapping[OptimizerKey, tuple[int, ...]],
                      rate_book: list[PricedModel]) -> dict[Labels, float | int]:
    """``optimizer_spend_usd_total``: (month, model, tenant, price_version) -> dollars at list prices."""
    out: dict[Labels, float | int] = {}
    for key, cell in optimizer.items():
        if key.rate_id != UNPRICED:
            rates = rate_book[key.rate_id]
            _add(out, (key.month, key.model, key.tenant, rates.version), optimizer_spend(cell, rates))
    return out
