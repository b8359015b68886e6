"""Savings the gateway makes itself: response-cache hits and model routing (docs/prices.md, "Gateway savings").

A response-cache hit made no provider call. It is counted here and nowhere
else (no request, spend, tokens, compression or provider-cache saving, no
optimizer spend): one hit by kind, and the bill its cached response's usage
would have had at the hit's own time and price version (the spend formula,
cache tiers included). A hit without usage, or of an unpriced model, is a hit
with dollars unknown (``hits_unpriced``), never $0.

A routed request (``requested_model`` given and not ``model``) is counted as
usual at the model called, and here too: the bill at the requested model minus
the bill at the model called, same usage, same price version. The sign of that
difference depends on a record's token mix, so a routing cell keeps two sets of
integer usage sums, one for records whose difference is >= 0 (savings) and one
for those below (extra cost); dollars are derived when read, as for the cells.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from exporter.engine.cells import UNPRICED, written
from exporter.engine.labels import LabelCap
from exporter.engine.usage import Usage
from exporter.prices.table import PER_MILLION, PricedModel, PriceTable

if TYPE_CHECKING:
    from exporter.engine.aggregate import Aggregates

UNKNOWN_USAGE = "unknown_usage"  # a reason beside the price table's (unknown_model, before_first_version)
UNPRICED_HIT_FLAG = "unpriced_response_cache_hit"  # records_flagged_total: a hit whose dollars are unknown
TIERS = 5  # fresh, cache_read, cache_write_5m, cache_write_1h, output (a Usage's counts, in this order)
HIT_WIDTH = 1 + TIERS  # requests, then the tiers
# a routing cell: requests, the tiers of records whose difference is >= 0, then of those below 0
ROUTE_REQUESTS, ROUTE_SAVED, ROUTE_EXTRA = 0, 1, 1 + TIERS
ROUTE_WIDTH = 1 + 2 * TIERS
_MILLION = Fraction(int(PER_MILLION))


class HitKey(NamedTuple):
    """Where a hit goes: its labels and the rates its avoided bill is priced at (``UNPRICED``: unknown)."""

    month: str
    model: str
    tenant: str
    kind: str
    rate_id: int


class RoutingKey(NamedTuple):
    """Where a routed request goes: both models' labels and rates (both ``UNPRICED`` when either is)."""

    month: str
    requested_model: str
    model: str
    tenant: str
    requested_rate_id: int
    rate_id: int


def tiers(usage: Usage) -> tuple[int, int, int, int, int]:
    return (usage.fresh_input, usage.cache_read, usage.cache_write_5m, usage.cache_write_1h, usage.output)


def _rates(rates: PricedModel) -> tuple[float, float, float, float, float]:
    return (rates.input, rates.cache_read, rates.cache_write_5m, rates.cache_write_1h, rates.output)


def bill(counts: Sequence[int], rates: PricedModel) -> float:
    """The spend formula over five tier counts (docs/prices.md), as a float."""
    return sum(count * rate for count, rate in zip(counts, _rates(rates), strict=True)) / PER_MILLION


def exact_bill(counts: Sequence[int], rates: PricedModel) -> Fraction:
    """``bill`` exactly, at the rates as written in the table."""
    return sum((count * written(rate) for count, rate in zip(counts, _rates(rates), strict=True)),
               Fraction(0)) / _MILLION


@lru_cache(maxsize=4096)
def _deltas(requested: PricedModel, used: PricedModel) -> tuple[Fraction, ...]:
    """Per tier, the requested model's written rate minus the used model's."""
    return tuple(written(a) - written(b) for a, b in zip(_rates(requested), _rates(used), strict=True))


def exact_routing(cell: Sequence[int], requested: PricedModel, used: PricedModel) -> tuple[Fraction, Fraction]:
    """(savings, extra cost) of a routing cell, exactly; both >= 0."""
    deltas = _deltas(requested, used)
    saved = sum((cell[ROUTE_SAVED + i] * d for i, d in enumerate(deltas)), Fraction(0)) / _MILLION
    extra = sum((cell[ROUTE_EXTRA + i] * d for i, d in enumerate(deltas)), Fraction(0)) / _MILLION
    return saved, -extra


def routing_dollars(cell: Sequence[int], requested: PricedModel, used: PricedModel) -> tuple[float, float]:
    """``exact_routing`` as floats for /metrics (per-tier differences, clipped at 0 against rounding)."""
    deltas = [a - b for a, b in zip(_rates(requested), _rates(used), strict=True)]
    saved = sum(cell[ROUTE_SAVED + i] * d for i, d in enumerate(deltas)) / PER_MILLION
    extra = -sum(cell[ROUTE_EXTRA + i] * d for i, d in enumerate(deltas)) / PER_MILLION
    return max(saved, 0.0), max(extra, 0.0)


class GatewaySavings:
    """The hit and routing tables of ``Aggregates`` (integer sums; plain data)."""

    def __init__(self) -> None:
        self.hits: dict[HitKey, list[int]] = {}
        self.hits_unpriced: dict[tuple[str, str, str, str], int] = {}  # (month, model, kind, reason)
        self.routed: dict[RoutingKey, list[int]] = {}
        self.routed_unpriced: dict[tuple[str, str, str, str], int] = {}  # (month, requested, model, reason)

    def months(self) -> set[str]:
        return {key[0] for table in self._tables() for key in table}

    def _tables(self) -> tuple[dict[Any, Any], ...]:
        return (self.hits, self.hits_unpriced, self.routed, self.routed_unpriced)

    def models(self) -> Iterator[str]:
        """Model label values these tables hold (they keep their cap slots after a restart)."""
        yield from (key.model for key in self.hits)
        for key in self.routed:
            yield key.requested_model
            yield key.model

    def keep(self, keep: Callable[[str], bool]) -> None:
        """Forget the months ``keep`` refuses."""
        self.hits = {k: v for k, v in self.hits.items() if keep(k.month)}
        self.hits_unpriced = {k: v for k, v in self.hits_unpriced.items() if keep(k[0])}
        self.routed = {k: v for k, v in self.routed.items() if keep(k.month)}
        self.routed_unpriced = {k: v for k, v in self.routed_unpriced.items() if keep(k[0])}

    def add(self, other: GatewaySavings, renumbered: Callable[[int], int]) -> None:
        """Add ``other``'s sums (``renumbered`` maps its rate ids into this rate book)."""
        for key, cell in other.hits.items():
            _add_into(self.hits, key._replace(rate_id=renumbered(key.rate_id)), cell)
        for rkey, rcell in other.routed.items():
            _add_into(self.routed, rkey._replace(requested_rate_id=renumbered(rkey.requested_rate_id),
                                                 rate_id=renumbered(rkey.rate_id)), rcell)
        for mine, theirs in ((self.hits_unpriced, other.hits_unpriced), (self.routed_unpriced, other.routed_unpriced)):
            for ukey, count in theirs.items():
                mine[ukey] = mine.get(ukey, 0) + count

    def copy(self) -> GatewaySavings:
        """A copy for a render frame (cells copied: the pipeline keeps adding to its own)."""
        found = GatewaySavings()
        found.hits = {k: v.copy() for k, v in self.hits.items()}
        found.hits_unpriced = dict(self.hits_unpriced)
        found.routed = {k: v.copy() for k, v in self.routed.items()}
        found.routed_unpriced = dict(self.routed_unpriced)
        return found

    # --- the replay JSON ------------------------------------------------------------------------------
    def month_totals(self, months: dict[str, dict[str, Any]], rate_book: list[PricedModel]) -> None:
        """Add this month's hit and routing totals to replay's month dicts (exact dollars, rounded once)."""
        usd: dict[str, list[Fraction]] = {name: [Fraction(0)] * 3 for name in months}  # avoided, saved, extra
        counts = {name: dict.fromkeys(COUNT_KEYS, 0) for name in months}
        for key, cell in self.hits.items():
            counts[key.month]["response_cache_hits"] += cell[0]
            if key.rate_id != UNPRICED:
                usd[key.month][0] += exact_bill(cell[1:], rate_book[key.rate_id])
        for (name, *_rest), count in self.hits_unpriced.items():
            counts[name]["response_cache_unpriced_hits"] += count
        for rkey, rcell in self.routed.items():
            counts[rkey.month]["routed_requests"] += rcell[ROUTE_REQUESTS]
            if rkey.rate_id != UNPRICED:
                saved, extra = exact_routing(rcell, rate_book[rkey.requested_rate_id], rate_book[rkey.rate_id])
                usd[rkey.month][1] += saved
                usd[rkey.month][2] += extra
        for (name, *_rest), count in self.routed_unpriced.items():
            counts[name]["routing_unpriced_requests"] += count
        for name, totals in months.items():
            avoided, saved, extra = usd[name]
            totals.update(counts[name])
            totals.update(response_cache_avoided_usd=float(avoided), routing_savings_usd=float(saved),
                          routing_extra_cost_usd=float(extra), routing_net_usd=float(saved - extra))

    # --- checkpoint ---------------------------------------------------------------------------------
    def to_state(self) -> dict[str, Any]:
        return {"hits": [[*k, *v] for k, v in self.hits.items()],
                "hits_unpriced": [[*k, v] for k, v in self.hits_unpriced.items()],
                "routed": [[*k, *v] for k, v in self.routed.items()],
                "routed_unpriced": [[*k, v] for k, v in self.routed_unpriced.items()]}

    @classmethod
    def from_state(cls, state: dict[str, Any] | None) -> GatewaySavings:
        """``to_state``'s output; None (a checkpoint written before these tables) is empty."""
        found = cls()
        if state is None:
            return found
        for row in state["hits"]:
            month, model, tenant, kind = map(str, row[:4])
            found.hits[HitKey(month, model, tenant, kind, int(row[4]))] = _width([int(v) for v in row[5:]], HIT_WIDTH)
        for row in state["routed"]:
            month, requested, model, tenant = map(str, row[:4])
            key = RoutingKey(month, requested, model, tenant, int(row[4]), int(row[5]))
            found.routed[key] = _width([int(v) for v in row[6:]], ROUTE_WIDTH)
        found.hits_unpriced = _counts(state["hits_unpriced"])
        found.routed_unpriced = _counts(state["routed_unpriced"])
        return found


COUNT_KEYS = ("response_cache_hits", "response_cache_unpriced_hits", "routed_requests", "routing_unpriced_requests")
USD_KEYS = ("response_cache_avoided_usd", "routing_savings_usd", "routing_extra_cost_usd", "routing_net_usd")


def _width(cell: list[int], width: int) -> list[int]:
    if len(cell) != width:
        raise ValueError("checkpoint gateway cell has the wrong width")
    return cell


def _counts(rows: Iterable[list[Any]]) -> dict[tuple[str, str, str, str], int]:
    found: dict[tuple[str, str, str, str], int] = {}
    for row in rows:
        month, first, second, reason = map(str, row[:4])
        found[(month, first, second, reason)] = int(row[4])
    return found


def _add_into(table: dict[Any, list[int]], key: Any, cell: Sequence[int]) -> None:
    mine = table.get(key)
    if mine is None:
        table[key] = list(cell)
    else:
        for index, value in enumerate(cell):
            mine[index] += value


# --- counting (the pipeline calls these for counted records: after dedupe and the plausibility cap) --------
def _known(usage: Usage | None) -> tuple[int, int, int, int, int] | None:
    """A usage's tier counts, or None when there is none to price (absent, or all zero)."""
    if usage is None:
        return None
    counts = tiers(usage)
    return counts if any(counts) else None


def _prompt(usage: Usage | None) -> int:
    """The prompt size that selects a price table v2 prompt tier."""
    if usage is None:
        return 0
    return usage.fresh_input + usage.cache_read + usage.cache_write_5m + usage.cache_write_1h


def count_hit(agg: Aggregates, model_cap: LabelCap, prices: PriceTable, month: str, ts: float, model: str,
              provider: str | None, tenant: str, kind: str, usage: Usage | None,
              service_tier: str | None = None) -> None:
    """One response-cache hit (``tenant`` is the tenant label): its kind, and its avoided bill if known
    (at the rates its service tier and prompt size select, as the original call was billed)."""
    gateway = agg.gateway
    priced = prices.lookup(model, ts, provider, service_tier=service_tier, prompt_tokens=_prompt(usage))
    counts = _known(usage)
    reason = priced if isinstance(priced, str) else UNKNOWN_USAGE if counts is None else None
    label = model_cap(priced.model if isinstance(priced, PricedModel) else model)
    rate_id = UNPRICED if reason is not None or not isinstance(priced, PricedModel) else agg.rate_id(priced)
    key = HitKey(month, label, tenant, kind, rate_id)
    cell = gateway.hits.get(key)
    if cell is None:
        cell = gateway.hits[key] = [0] * HIT_WIDTH
    cell[0] += 1
    if reason is not None:
        agg.count(gateway.hits_unpriced, (month, label, kind, reason))
        agg.count(agg.flagged, (month, UNPRICED_HIT_FLAG))
        return
    assert counts is not None
    for index, value in enumerate(counts, 1):
        cell[index] += value


def count_routing(agg: Aggregates, model_cap: LabelCap, prices: PriceTable, month: str, ts: float,
                  requested: str, provider: str | None, model_label: str, tenant: str, rate_id: int,
                  used_reason: str | None, usage: Usage | None, service_tier: str | None = None) -> None:
    """One routed request, already counted at the model called (its label ``model_label``, rates ``rate_id``,
    or ``used_reason`` why it is unpriced); the requested model is priced at the same service tier and prompt size."""
    gateway = agg.gateway
    priced = prices.lookup(requested, ts, provider, service_tier=service_tier, prompt_tokens=_prompt(usage))
    requested_label = model_cap(priced.model if isinstance(priced, PricedModel) else requested)
    counts = _known(usage)
    reason = (priced if isinstance(priced, str) else (used_reason or "unknown_model") if rate_id == UNPRICED
              else UNKNOWN_USAGE if counts is None else None)
    if reason is not None:
        key = RoutingKey(month, requested_label, model_label, tenant, UNPRICED, UNPRICED)
        agg.count(gateway.routed_unpriced, (month, requested_label, model_label, reason))
    else:
        assert isinstance(priced, PricedModel)
        key = RoutingKey(month, requested_label, model_label, tenant, agg.rate_id(priced), rate_id)
    cell = gateway.routed.get(key)
    if cell is None:
        cell = gateway.routed[key] = [0] * ROUTE_WIDTH
    cell[ROUTE_REQUESTS] += 1
    if reason is not None:
        return
    assert counts is not None
    used = agg.rate_book[rate_id]
    diff = sum((count * delta for count, delta in zip(counts, _deltas(priced, used), strict=True)), Fraction(0))
    base = ROUTE_SAVED if diff >= 0 else ROUTE_EXTRA
    for index, value in enumerate(counts):
        cell[base + index] += value
