"""Span dialects: which instrumentation wrote a span, and how to read its usage.

One module per dialect (what the instrumentation emits, checked in its
source, is in that module's docstring), each defining ``DIALECT``. The order
is ``DIALECTS`` below, the detection precedence: the first dialect whose
``detect`` claims the span wins; when none does, the first whose
``detect_shared`` claims it (attributes several dialects share, like the
gen_ai cache names, or the savings attributes any span may carry). A span no
dialect claims maps with ``FALLBACK`` when it is a model call at all.

Adding a dialect: a new module here with its attribute names as constants,
``detect``, ``usage`` and a ``DIALECT``, and one line in ``DIALECTS``. A dialect
whose counts are plain attributes names them instead of reading them
(``base.counted`` with ``CountNames``): the mapping then reads only the names
a span's shape carries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.sources.otlp.dialects import (
    anthropic_sdk,
    gen_ai,
    gen_ai_legacy,
    langfuse,
    litellm,
    llm_savings,
    openai_v2,
    openinference,
    openlit,
    openllmetry,
    pydantic_ai,
)
from exporter.sources.otlp.dialects.base import SOURCE_FLAGS, Detect, Dialect, UsageCounts

DIALECTS: tuple[Dialect, ...] = (
    # by their own attribute names (litellm.*, langfuse.*): before anything reading gen_ai names
    litellm.DIALECT,
    langfuse.DIALECT,
    # by instrumentation scope, each with the gen_ai names read its own way (captured)
    anthropic_sdk.DIALECT,
    openlit.DIALECT,
    openai_v2.DIALECT,
    openllmetry.DIALECT,
    pydantic_ai.DIALECT,  # before gen_ai: same usage names, told apart by scope or its cache names
    gen_ai.DIALECT,
    gen_ai_legacy.DIALECT,
    openinference.DIALECT,
    llm_savings.DIALECT,
)
FALLBACK = llm_savings.DIALECT
DIALECT_NAMES = tuple(dialect.name for dialect in DIALECTS)
# Every exact attribute name a dialect reads (the decoders keep these).
DIALECT_KEYS = frozenset().union(*(dialect.keys for dialect in DIALECTS))
# The names whose values some detection reads (a span with one is detected from its values).
DETECT_VALUE_KEYS = frozenset().union(*(dialect.detect_reads for dialect in DIALECTS))

_OWN: tuple[tuple[Dialect, Detect], ...] = tuple((dialect, dialect.detect) for dialect in DIALECTS)
_SHARED: tuple[tuple[Dialect, Detect], ...] = tuple(
    (dialect, dialect.detect_shared) for dialect in DIALECTS if dialect.detect_shared is not None
)


def detect_dialect(attrs: Mapping[str, Any], scope_name: str) -> Dialect | None:
    """The span's dialect in ``DIALECTS`` precedence, None when no dialect claims it."""
    for dialect, detect in _OWN:
        if detect(attrs, scope_name):
            return dialect
    for dialect, detect in _SHARED:
        if detect(attrs, scope_name):
            return dialect
    return None


__all__ = [
    "DETECT_VALUE_KEYS",
    "DIALECTS",
    "DIALECT_KEYS",
    "DIALECT_NAMES",
    "FALLBACK",
    "SOURCE_FLAGS",
    "Dialect",
    "UsageCounts",
    "detect_dialect",
]
