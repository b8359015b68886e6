"""The values passed between the decoders and the mapping: span views, options, outcomes."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from exporter.sources.otlp.attributes import COMMON_KEYS, DEFAULT_TENANT_ATTRIBUTES, KEPT_PREFIXES
from exporter.sources.otlp.dialects import DIALECT_KEYS
from exporter.sources.otlp.gateway import KEYS as GATEWAY_KEYS

# Exact keys a decoder keeps; plus any key under KEPT_PREFIXES. Everything else
# (prompts, completions, tool arguments) is never even decoded into a string.
_EXACT_KEYS = COMMON_KEYS | DIALECT_KEYS | GATEWAY_KEYS
_MAX_DECISIONS = 4096
# Names longer than this (no semantic convention's is) are decided each time, never remembered:
# a client chooses them, and a remembered name is held for the options' life. Every cache keyed by
# names (decisions, value kinds, shape plans) holds at most a count of them, each at most this long.
MAX_REMEMBERED_NAME = 256
# Entries the correlation memory holds at most (a 512-span request adds about 600).
CORRELATION_MAX_ENTRIES = 65536


@dataclass(slots=True)
class SpanView:
    """The parts of one span the mapping reads; ``attrs`` holds only wanted keys."""

    attrs: dict[str, Any]
    resource: dict[str, Any]
    scope_name: str
    trace_id: str  # lowercase hex, "" when absent
    span_id: str
    start_ns: int
    end_ns: int
    parent_span_id: str = ""  # lowercase hex, "" for a root span


@dataclass(frozen=True, slots=True)
class MappingOptions:
    """Deployment choices for the mapping (documented in ``exporter.sources.otlp.mapping``)."""

    tenant_attributes: tuple[str, ...] = DEFAULT_TENANT_ATTRIBUTES
    input_includes_cache: bool | None = None  # None: the total decides, else the dialect
    correlate: bool = True  # one provider call reported by several spans counted once (mapping)
    correlation_window_seconds: float = 120.0
    correlation_end_tolerance_seconds: float = 1.0
    correlation_max_entries: int = CORRELATION_MAX_ENTRIES

    # key -> wanted? Keys repeat across spans; bounded because clients choose them.
    _decisions: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)
    # the cross-request memory of the correlation rules (exporter.sources.otlp.correlator)
    _memory: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def wanted(self, key: str) -> bool:
        decision = self._decisions.get(key)
        if decision is None:
            decision = (
                key in _EXACT_KEYS
                or key.startswith(KEPT_PREFIXES)
                or key in self.tenant_attributes
            )
            if len(self._decisions) < _MAX_DECISIONS and len(key) <= MAX_REMEMBERED_NAME:
                self._decisions[key] = decision
        return decision


DEFAULT_OPTIONS = MappingOptions()


@dataclass(slots=True)
class Mapped:
    """A mapped span's record. Not frozen: one is made per model-call span, and a frozen
    dataclass's ``__init__`` sets its field through ``object.__setattr__`` (1,300 instructions more)."""

    record: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Ignored:
    reason: str


@dataclass(frozen=True, slots=True)
class Rejected:
    reason: str
    detail: str
    ts: float | None = None  # the span's end time when it was readable, so it counts in its month


SpanOutcome = Mapped | Ignored | Rejected


@dataclass(slots=True)
class BatchResult:
    """Outcome of one export request (or one file-exporter line)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    rejected: Counter[str] = field(default_factory=Counter)
    rejections: list[tuple[str, float | None]] = field(
        default_factory=list
    )  # (reason, ts) per span
    ignored: Counter[str] = field(default_factory=Counter)

    def reject(self, outcome: Rejected) -> None:
        self.rejected[outcome.reason] += 1
        self.rejections.append((outcome.reason, outcome.ts))

    def add(self, outcome: Mapped | Ignored | Rejected) -> None:
        """Record one span's outcome."""
        if isinstance(outcome, Mapped):
            self.records.append(outcome.record)
        elif isinstance(outcome, Ignored):
            self.ignored[outcome.reason] += 1
        else:
            self.reject(outcome)

    @property
    def rejected_count(self) -> int:
        return sum(self.rejected.values())

    def rejection_message(self) -> str:
        """Human summary for ``partial_success.error_message``: how many and why."""
        if not self.rejected:
            return ""
        parts = ", ".join(f"{reason}={n}" for reason, n in sorted(self.rejected.items()))
        return f"{self.rejected_count} spans rejected ({parts})"


__all__ = [
    "CORRELATION_MAX_ENTRIES",
    "DEFAULT_OPTIONS",
    "MAX_REMEMBERED_NAME",
    "BatchResult",
    "Ignored",
    "Mapped",
    "MappingOptions",
    "Rejected",
    "SpanOutcome",
    "SpanView",
]
