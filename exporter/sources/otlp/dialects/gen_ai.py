"""``gen_ai``: the current OpenTelemetry GenAI semantic conventions.

Current semconv: ``gen_ai.usage.input_tokens``/``output_tokens``,
``gen_ai.usage.cache_read.input_tokens``, ``gen_ai.usage.cache_creation.input_tokens``.
The convention says input_tokens "SHOULD include all types of input tokens,
including cached tokens" and each cache count "SHOULD be included in
gen_ai.usage.input_tokens". Also read: OpenLLMetry's underscore names
``gen_ai.usage.cache_read_input_tokens``/``cache_creation_input_tokens``
(its Anthropic instrumentation reports input = input + cache_read +
cache_creation), the registry's ``gen_ai.usage.cache_write.input_tokens``,
and Strands' ``gen_ai.usage.cache_write_input_tokens``. OpenLIT emits the
current names with ``gen_ai.system``.

A span with cache counts but no input/output count is ``gen_ai`` too, unless
another dialect claims it by its own names (``detect_shared``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.sources.otlp.dialects.base import CountNames, UsageCounts, counted, read_counts

A_INPUT = "gen_ai.usage.input_tokens"
A_OUTPUT = "gen_ai.usage.output_tokens"
A_TOTAL = "gen_ai.usage.total_tokens"
A_LEGACY_TOTAL = "llm.usage.total_tokens"
CACHE_READ_KEYS = (
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_read_input_tokens",
)
CACHE_WRITE_KEYS = (
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.cache_write.input_tokens",
    "gen_ai.usage.cache_creation_input_tokens",
    "gen_ai.usage.cache_write_input_tokens",
)


def detect(attrs: Mapping[str, Any], scope_name: str) -> bool:
    return A_INPUT in attrs or A_OUTPUT in attrs


def detect_cache_only(attrs: Mapping[str, Any], scope_name: str) -> bool:
    return any(k in attrs for k in CACHE_READ_KEYS) or any(k in attrs for k in CACHE_WRITE_KEYS)


# The current semconv counts (the total without OpenLLMetry's name: the dialects that share this
# reading take only the semconv total), and gen_ai's own reading, with OpenLLMetry's total after it.
SEMCONV_COUNTS = CountNames((A_INPUT,), (A_OUTPUT,), CACHE_READ_KEYS, CACHE_WRITE_KEYS, (A_TOTAL,))
COUNTS = SEMCONV_COUNTS._replace(total=(A_TOTAL, A_LEGACY_TOTAL))
_SEMCONV_PAIRS = SEMCONV_COUNTS.pairs()


def semconv_counts(
    attrs: Mapping[str, Any],
    *,
    write_5m: int | None = None,
    write_1h: int | None = None,
    includes_cache: bool | None = None,
    flags: tuple[str, ...] = (),
) -> UsageCounts:
    """The current semconv counts (input, output, cache read and write, total) with what a
    dialect knows beyond them; the dialects that write these names share this reading."""
    counts = read_counts(attrs, _SEMCONV_PAIRS, includes_cache, flags)
    if write_5m is None and write_1h is None:
        return counts
    return counts._replace(write_5m=write_5m, write_1h=write_1h)


KEYS: frozenset[str] = COUNTS.keys()

DIALECT = counted("gen_ai", detect, COUNTS, detect_shared=detect_cache_only)
