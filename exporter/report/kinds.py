"""The four kinds of saving of one month side by side: compression, provider cache, response cache, routing.

The kinds never overlap (a response-cache hit carries no compression or
provider-cache saving; routing is apart from compression), so the total saved
is their plain sum and each kind's share is its dollars over that total.
Every kind comes from replay's month totals; the response cache and routing
through :class:`SavingsByKind`, which :func:`savings_by_kind` fills.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from exporter.report.numbers import share


class SavingsByKind(NamedTuple):
    """A month's response-cache and routing figures."""

    response_cache_usd: float = 0.0
    response_cache_hits: int = 0
    response_cache_unpriced_hits: int = 0
    routing_savings_usd: float = 0.0
    routing_extra_usd: float = 0.0

    @property
    def routing_net_usd(self) -> float:
        """Routing savings - routing extra cost: below 0 when routes to dearer models cost more."""
        return self.routing_savings_usd - self.routing_extra_usd


class KindLine(NamedTuple):
    """One kind of saving: its name, its dollars and its share of the total (None when the total is 0)."""

    name: str
    usd: float
    share: float | None


NO_KINDS = SavingsByKind()  # a month without response-cache hits or routed requests

KIND_NAMES = ("compression", "provider_cache", "response_cache", "routing")


def savings_by_kind(month_totals: Mapping[str, Any]) -> SavingsByKind:
    """The response-cache and routing figures of one month, from its month totals
    (``Aggregates.month_totals``: exact dollars rounded once, as replay prints them)."""
    return SavingsByKind(
        response_cache_usd=float(month_totals.get("response_cache_avoided_usd") or 0.0),
        response_cache_hits=int(month_totals.get("response_cache_hits") or 0),
        response_cache_unpriced_hits=int(month_totals.get("response_cache_unpriced_hits") or 0),
        routing_savings_usd=float(month_totals.get("routing_savings_usd") or 0.0),
        routing_extra_usd=float(month_totals.get("routing_extra_cost_usd") or 0.0))


def kind_lines(totals: Mapping[str, Any], kinds: SavingsByKind) -> tuple[KindLine, ...]:
    """The four kinds in a fixed order; the total is ``sum(line.usd)``."""
    values = (float(totals.get("usd_saved") or 0.0), float(totals.get("cache_savings_usd") or 0.0),
              float(kinds.response_cache_usd), float(kinds.routing_net_usd))
    total = sum(values)
    return tuple(KindLine(name, usd, share(usd, total) if total else None)
                 for name, usd in zip(KIND_NAMES, values, strict=True))


def total_saved(lines: tuple[KindLine, ...]) -> float:
    return sum(line.usd for line in lines)
