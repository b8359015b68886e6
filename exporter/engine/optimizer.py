"""The optimizer's own spend (net savings): a record's ``optimizer`` block into the optimizer tables.

A compressor that calls a model to compress costs money. Its usage is priced
like a request, as the provider bills it: the same price table, the version
effective at the record's timestamp, the prompt tier its own prompt size
selects and its own ``service_tier`` (one the model does not list: base rates,
flagged ``unknown_service_tier``), the optimizer's own model (which takes a
slot of the model label cap like any model). A block summing several calls is
priced as one call of that size. An optimizer model the table does not price,
or a usage block of an unknown shape, is counted in ``optimizer_unpriced`` by
reason and adds no dollars: never a silent $0. Only counted records get here (after
dedupe and the plausibility cap), so a duplicate never pays twice.
"""

from __future__ import annotations

from exporter.engine.aggregate import Aggregates
from exporter.engine.cells import (
    OPT_CACHE_READ,
    OPT_FRESH,
    OPT_OUTPUT,
    OPT_REQUESTS,
    OPT_WRITE_1H,
    OPT_WRITE_5M,
    UNPRICED,
    OptimizerKey,
)
from exporter.engine.labels import LabelCap
from exporter.engine.usage import OptimizerCall
from exporter.prices.table import PricedModel, PriceTable
from exporter.prices.tiers import UNKNOWN_SERVICE_TIER

UNKNOWN_USAGE_SHAPE = "unknown_usage_shape"  # a reason of optimizer_unpriced_requests_total, beside the table's


def implausible(call: OptimizerCall, cap: int) -> bool:
    """Whether the optimizer's usage passes the per-request cap (the record is then refused whole)."""
    usage = call.usage
    return usage is not None and (
        usage.output > cap
        or usage.fresh_input + usage.cache_read + usage.cache_write_5m + usage.cache_write_1h > cap)


def count_optimizer(agg: Aggregates, model_cap: LabelCap, prices: PriceTable, month: str, ts: float, tenant: str,
                    call: OptimizerCall) -> bool:
    """Add one record's optimizer usage (``tenant`` is the record's tenant label).

    True when the call's service tier is unknown to the table (priced at base rates): the caller
    flags the record ``unknown_service_tier`` once, whichever of its tiers was unknown.
    """
    usage = call.usage
    if usage is None:
        agg.count(agg.optimizer_unpriced, (month, model_cap(call.model), UNKNOWN_USAGE_SHAPE))
        return False
    # billed as the provider bills it: the call's own prompt size picks the prompt tier, its service tier the rates
    priced = prices.lookup(call.model, ts, call.provider, service_tier=call.service_tier,
                           prompt_tokens=usage.fresh_input + usage.cache_read + usage.cache_write_5m
                           + usage.cache_write_1h)
    unknown_tier = False
    if isinstance(priced, PricedModel):
        unknown_tier = priced.service_tier == UNKNOWN_SERVICE_TIER  # base rates, never silently
        key = OptimizerKey(month, model_cap(priced.model), tenant, agg.rate_id(priced))
    else:
        key = OptimizerKey(month, model_cap(call.model), tenant, UNPRICED)
        agg.count(agg.optimizer_unpriced, (month, key.model, priced))
    cell = agg.optimizer_cell(key)
    cell[OPT_REQUESTS] += 1
    cell[OPT_FRESH] += usage.fresh_input
    cell[OPT_CACHE_READ] += usage.cache_read
    cell[OPT_WRITE_5M] += usage.cache_write_5m
    cell[OPT_WRITE_1H] += usage.cache_write_1h
    cell[OPT_OUTPUT] += usage.output
    return unknown_tier
