"""Label caps: bounded cardinality for values that come from the input.

Model names, tenants, count methods and component names come from logs that
anyone can write; each gets a cap. Past the cap (or outside an allow-list,
longer than a label should ever be, or holding control characters) a value becomes ``other`` and the
overflow is counted, so a flood of distinct names cannot blow up Prometheus.
"""

from __future__ import annotations

from collections.abc import Iterable

OTHER = "other"
MAX_LABEL_LENGTH = 128
# component values the engine writes itself (engine.pipeline.UNATTRIBUTED, engine.cells.TIER_JUMP):
# a record's component of that name would merge into them, so it is folded like any refused value
RESERVED_COMPONENTS = frozenset({"unattributed", "tier_jump"})


class LabelCap:
    def __init__(self, name: str, max_values: int, allowlist: Iterable[str] = (), reserved: Iterable[str] = ()) -> None:
        self.name = name
        self.max_values = max_values
        self.allowlist = frozenset(allowlist)
        self.reserved = frozenset(reserved)
        self.values: set[str] = set()
        self.overflow = 0

    def __call__(self, value: str) -> str:
        if value in self.values:
            return value
        if (
            len(value) > MAX_LABEL_LENGTH
            or (self.allowlist and value not in self.allowlist)
            or len(self.values) >= self.max_values
            or not value.isprintable()  # control characters (NUL, CR, LF...) never reach a label
            or value in self.reserved
        ):
            self.overflow += 1
            return OTHER
        self.values.add(value)
        return value

    def preload(self, values: Iterable[str]) -> None:
        """Values already in the checkpoint keep their place after a restart."""
        for value in values:
            if value != OTHER and value not in self.reserved and len(self.values) < self.max_values:
                self.values.add(value)


class LabelCaps:
    """The caps of one pipeline, by label name."""

    def __init__(
        self,
        max_models: int = 500,
        max_tenants: int = 200,
        max_methods: int = 20,
        max_components: int = 50,
        tenant_allowlist: Iterable[str] = (),
        model_allowlist: Iterable[str] = (),
    ) -> None:
        self.model = LabelCap("model", max_models, model_allowlist)
        self.tenant = LabelCap("tenant", max_tenants, tenant_allowlist)
        self.method = LabelCap("method", max_methods)
        self.component = LabelCap("component", max_components, reserved=RESERVED_COMPONENTS)

    def all(self) -> tuple[LabelCap, ...]:
        return (self.model, self.tenant, self.method, self.component)
