"""One model's rates in one price version (``PricedModel``), the value every priced record is keyed by.

The pipeline keys routes and cells by the ``PricedModel`` that priced them, a dict access per tiered
record: the generated dataclass hash would hash all fourteen fields every time, so the hash is worked
out once, when the rates are made (the fields are frozen), and a pickled one is rebuilt through
``__init__`` so a process with another string-hash seed never sees a stale hash.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

PROVIDER_METHOD = "provider"


@dataclass(frozen=True, slots=True)
class PricedModel:
    """Rates (USD per million tokens) of one model in one version, with its family's factors."""

    version: str
    model: str
    family: str
    input: float
    output: float
    cache_read: float
    cache_write_5m: float
    cache_write_1h: float
    factors: tuple[tuple[str, float], ...] = ()
    # provenance of v2 rates (prices.tiers): "above_200000", the service tier, the time window; "" = base
    tier: str = ""
    service_tier: str = ""
    window: str = ""
    # a saving across a prompt tier: the counterfactual's rates in field order (engine.pipeline._tiered)
    cliff_saved: tuple[float, ...] = ()
    cliff_would: tuple[float, ...] = ()
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # the tuple the generated __hash__ would hash: equal rates, equal hashes
        object.__setattr__(self, "_hash", hash((
            self.version, self.model, self.family, self.input, self.output, self.cache_read,
            self.cache_write_5m, self.cache_write_1h, self.factors, self.tier, self.service_tier,
            self.window, self.cliff_saved, self.cliff_would)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return PricedModel, tuple(getattr(self, f.name) for f in fields(self) if f.init)

    def factor(self, method: str | None) -> tuple[float, str]:
        """Billed-token factor for a count method and where it came from."""
        if method == PROVIDER_METHOD:
            return 1.0, "provider"
        if method is not None:
            for name, value in self.factors:
                if name == method:
                    return value, "table"
        return 1.0, "default"
