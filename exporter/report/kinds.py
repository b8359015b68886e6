"""The four kinds of saving of one month side by side: compression, provider cache, response cache, routing.

The kinds never overlap (a response-cache hit carries no compression or
provider-cache saving; routing is apart from compression), so the total saved
is their plain sum and each kind's share is its dollars over that total.
Compression and the provider cache come from replay's month totals; the
response cache and routing come through :class:`SavingsByKind`, which
:func:`savings_by_kind` fills from the aggregates: the one place that reads
the engine's response-cache and routing tables once it counts them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from exporter.engine.aggregate import Aggregates
from exporter.report.numbers import share


class SavingsByKind(NamedTuple):
    """A month's response-cache and routing figures (zero until the engine counts them)."""

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


NO_KINDS = SavingsByKind()  # what a month has before the engine counts response-cache hits and routing

KIND_NAMES = ("compression", "provider_cache", "response_cache", "routing")


def savings_by_kind(agg: Aggregates, month: str) -> SavingsByKind:
    """The response-cache and routing figures of ``month`` in ``agg``.

    The engine does not count response-cache hits or routing yet: every figure is 0 (not
    unknown: no hit and no route was counted). This is where its tables are read once it does.
    """
    del agg, month
    return SavingsByKind()


def kind_lines(totals: Mapping[str, Any], kinds: SavingsByKind) -> tuple[KindLine, ...]:
    """The four kinds in a fixed order; the total is ``sum(line.usd)``."""
    values = (float(totals.get("usd_saved") or 0.0), float(totals.get("cache_savings_usd") or 0.0),
              float(kinds.response_cache_usd), float(kinds.routing_net_usd))
    total = sum(values)
    return tuple(KindLine(name, usd, share(usd, total) if total else None)
                 for name, usd in zip(KIND_NAMES, values, strict=True))


def total_saved(lines: tuple[KindLine, ...]) -> float:
    return sum(line.usd for line in lines)
