"""A span's *shape* (its kept attribute names, in order, and its scope) -> what the mapping reads. Pure.

Spans of one instrumentation repeat the same shape by the thousand, so every
decision that depends only on which names a span carries is made once per
shape instead of once per span: which of the model, provider and tenant names
are present (the mapping then reads only those, in the same precedence), and
of the dialect's count names, when its counts are plain attributes,
whether any roll-up, savings, optimizer or gateway name is there at all, and
the dialect, when its detection depends on names alone. Detection reads values
only of ``DETECT_VALUE_KEYS`` (langfuse's observation type); a span carrying
one of those is detected anew every time. Values are never part of a shape,
so nothing of a span's content is kept here; the cache is bounded because
clients choose the names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from exporter.sources.otlp.attributes import (
    A_AGENT_NAME,
    A_OI_KIND,
    A_OI_MODEL,
    A_OI_PROVIDER,
    A_OI_SYSTEM,
    A_OPERATION,
    A_PAI_AGENT_NAME,
    A_PROVIDER,
    A_REQUEST_MODEL,
    A_RESPONSE_ID,
    A_RESPONSE_MODEL,
    A_SYSTEM,
    S_AFTER,
    S_BEFORE,
    S_METHOD,
    S_OPT_INPUT,
    S_OPT_MODEL,
    S_OPT_OUTPUT,
    S_REQUEST_ID,
    S_WOULD,
)
from exporter.sources.otlp.dialects import DETECT_VALUE_KEYS, Dialect, detect_dialect
from exporter.sources.otlp.dialects.base import CountPairs
from exporter.sources.otlp.dialects.langfuse import A_MODEL as A_LANGFUSE_MODEL
from exporter.sources.otlp.gateway import KEYS as GATEWAY_KEYS
from exporter.sources.otlp.gateway import S_RESPONSE_CACHE
from exporter.sources.otlp.spans import MAX_REMEMBERED_NAME

MODEL_KEYS = (A_RESPONSE_MODEL, A_REQUEST_MODEL, A_OI_MODEL, A_LANGFUSE_MODEL)
PROVIDER_KEYS = (A_PROVIDER, A_SYSTEM, A_OI_PROVIDER, A_OI_SYSTEM)
SAVINGS_KEYS = (S_BEFORE, S_AFTER, S_WOULD)
_ROLLUP_KEYS = frozenset({A_OPERATION, A_OI_KIND, A_AGENT_NAME, A_PAI_AGENT_NAME})
_OPTIMIZER_KEYS = frozenset({S_OPT_MODEL, S_OPT_INPUT, S_OPT_OUTPUT})
_GATEWAY_KEYS = GATEWAY_KEYS | {S_RESPONSE_CACHE}
MAX_PLANS = 4096
UNDECIDED: Any = object()  # Plan.dialect when the span's values decide it (detect anew)


@dataclass(frozen=True, slots=True)
class Plan:
    """What a span of one shape carries, as the mapping reads it.

    Slots, not a named tuple: the mapping reads a dozen of its fields per span, and CPython 3.11
    specialises an attribute read of a slot, not of a named tuple's field."""

    rollup: bool  # a roll-up/kind name is present: check the values
    model_keys: tuple[str, ...]  # MODEL_KEYS present, in precedence order
    provider_keys: tuple[str, ...]
    tenant_keys: tuple[str, ...]  # the options' tenant names present on the span
    dialect: Dialect | None  # UNDECIDED: detect from the values
    has_savings: bool  # a savings count name is present
    savings_or_method: bool  # ... or llm_savings.count_method
    request_id_key: bool  # llm_savings.request_id present
    response_id_key: bool  # gen_ai.response.id present
    optimizer: bool
    gateway: bool  # any name gateway_keys reads
    own: bool  # an llm_savings.* name: this project's own span (never correlated)
    counts: CountPairs | None  # the dialect's count names the span carries, when it reads plain counts


def _present(keys: Iterable[str], names: frozenset[str]) -> tuple[str, ...]:
    return tuple(key for key in keys if key in names)


def build_plan(
    attrs: Mapping[str, Any], scope_name: str, tenant_attributes: tuple[str, ...]
) -> Plan:
    """The plan of ``attrs``' shape (its dialect detected from these very attributes)."""
    names = frozenset(attrs)
    dialect = UNDECIDED if names & DETECT_VALUE_KEYS else detect_dialect(attrs, scope_name)
    has_savings = any(key in names for key in SAVINGS_KEYS)
    plain = dialect.counts if isinstance(dialect, Dialect) else None
    return Plan(
        rollup=bool(names & _ROLLUP_KEYS),
        model_keys=_present(MODEL_KEYS, names),
        provider_keys=_present(PROVIDER_KEYS, names),
        tenant_keys=_present(tenant_attributes, names),
        dialect=dialect,
        has_savings=has_savings,
        savings_or_method=has_savings or S_METHOD in names,
        request_id_key=S_REQUEST_ID in names,
        response_id_key=A_RESPONSE_ID in names,
        optimizer=bool(names & _OPTIMIZER_KEYS),
        gateway=bool(names & _GATEWAY_KEYS),
        own=any(key.startswith("llm_savings.") for key in names),
        counts=plain.pairs(names) if plain is not None else None,
    )


def plan_for(
    plans: dict[tuple[Any, ...], Plan],
    attrs: Mapping[str, Any],
    scope_name: str,
    tenant_attributes: tuple[str, ...],
) -> Plan:
    """The cached plan of ``attrs``' shape in ``plans`` (one cache per ``MappingOptions``; ``map_spans``
    looks the same key up inline first)."""
    shape = (scope_name, *attrs)
    plan = plans.get(shape)
    if plan is None:
        plan = build_plan(attrs, scope_name, tenant_attributes)
        # a shape with a name (or scope) too long to remember is planned each time: a client could
        # otherwise park MAX_PLANS names of up to a body's size each here for the options' life
        if len(plans) < MAX_PLANS and max(map(len, shape)) <= MAX_REMEMBERED_NAME:
            plans[shape] = plan
    return plan


__all__ = ["MAX_PLANS", "MODEL_KEYS", "PROVIDER_KEYS", "UNDECIDED", "Plan", "build_plan", "plan_for"]
