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

from exporter.sources.otlp.attributes import first_count, read_count
from exporter.sources.otlp.dialects.base import Dialect, UsageCounts

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
    return UsageCounts(  # positional: the fields in their declared order
        read_count(attrs, A_INPUT),
        read_count(attrs, A_OUTPUT),
        first_count(attrs, CACHE_READ_KEYS),
        first_count(attrs, CACHE_WRITE_KEYS),
        read_count(attrs, A_TOTAL),
        write_5m,
        write_1h,
        includes_cache,
        flags,
    )


def usage(attrs: Mapping[str, Any]) -> UsageCounts:
    inp, out = read_count(attrs, A_INPUT), read_count(attrs, A_OUTPUT)
    read = first_count(attrs, CACHE_READ_KEYS)
    write = first_count(attrs, CACHE_WRITE_KEYS)
    total = read_count(attrs, A_TOTAL)
    if total is None:  # OpenLLMetry's name
        total = read_count(attrs, A_LEGACY_TOTAL)
    return UsageCounts(inp, out, read, write, total)


KEYS = frozenset({A_INPUT, A_OUTPUT, A_TOTAL, A_LEGACY_TOTAL, *CACHE_READ_KEYS, *CACHE_WRITE_KEYS})

DIALECT = Dialect(
    name="gen_ai", detect=detect, usage=usage, keys=KEYS, detect_shared=detect_cache_only
)
