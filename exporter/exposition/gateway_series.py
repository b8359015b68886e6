"""Series of the gateway's own savings: response-cache hits and model routing (``engine.gateway``).

Pure functions of a frame's copy of the tables, each series in first-seen
order (dict order), so the exposition is the same in every process for the
same input. Dollars are derived from the integer sums at the rates they were
counted under, as ``usd_saved_total`` is from the cells.
"""

from __future__ import annotations

from collections.abc import Iterable

from exporter import catalog
from exporter.engine.cells import UNPRICED
from exporter.engine.gateway import ROUTE_REQUESTS, GatewaySavings, bill, routing_dollars
from exporter.prices.table import PricedModel

Labels = tuple[str, ...]
Series = Iterable[tuple[Labels, float | int]]


def _add(table: dict[Labels, float | int], labels: Labels, value: float | int) -> None:
    table[labels] = table.get(labels, 0) + value


def gateway_series(gateway: GatewaySavings, rate_book: list[PricedModel]) -> dict[str, Series]:
    """Metric name -> series, for the seven hit and routing families of the catalog."""
    hits: dict[Labels, float | int] = {}
    avoided: dict[Labels, float | int] = {}
    for key, cell in gateway.hits.items():
        labels = (key.month, key.model, key.tenant, key.kind)
        _add(hits, labels, cell[0])
        if key.rate_id != UNPRICED:
            rates = rate_book[key.rate_id]
            _add(avoided, (*labels, rates.version), bill(cell[1:], rates))
    routed: dict[Labels, float | int] = {}
    saved: dict[Labels, float | int] = {}
    extra: dict[Labels, float | int] = {}
    for rkey, rcell in gateway.routed.items():
        labels = (rkey.month, rkey.requested_model, rkey.model, rkey.tenant)
        _add(routed, labels, rcell[ROUTE_REQUESTS])
        if rkey.rate_id != UNPRICED:
            used = rate_book[rkey.rate_id]
            savings, cost = routing_dollars(rcell, rate_book[rkey.requested_rate_id], used)
            _add(saved, (*labels, used.version), savings)
            _add(extra, (*labels, used.version), cost)
    return {
        catalog.RESPONSE_CACHE_HITS_TOTAL.name: hits.items(),
        catalog.RESPONSE_CACHE_AVOIDED_USD_TOTAL.name: avoided.items(),
        catalog.RESPONSE_CACHE_UNPRICED_HITS_TOTAL.name: gateway.hits_unpriced.items(),
        catalog.ROUTED_REQUESTS_TOTAL.name: routed.items(),
        catalog.ROUTING_SAVINGS_USD_TOTAL.name: saved.items(),
        catalog.ROUTING_EXTRA_COST_USD_TOTAL.name: extra.items(),
        catalog.ROUTING_UNPRICED_REQUESTS_TOTAL.name: gateway.routed_unpriced.items(),
    }
