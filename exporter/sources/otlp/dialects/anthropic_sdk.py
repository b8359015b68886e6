"""``anthropic_sdk``: the spans the anthropic Python SDK writes itself.

Captured (tests/fixtures/dialects/anthropic_native, anthropic 2.14.0): scope
``com.anthropic.sdk.python``, span ``anthropic.messages.create`` (for
``messages.stream()`` too), ``gen_ai.usage.input_tokens`` INCLUDING cache reads
and writes (150 fresh + 2000 read + 1000 written -> 3150),
``gen_ai.usage.cache_read.input_tokens``, ``gen_ai.usage.cache_write.input_tokens``
and the split by lifetime ``anthropic.usage.cache_creation.ephemeral_5m_input_tokens``
/ ``ephemeral_1h_input_tokens``, plus ``gen_ai.response.id`` (Anthropic's
``msg_...``). Everything exact dollars need; no flag. Switched off with
``ANTHROPIC_OPEN_TELEMETRY=false``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.sources.otlp.attributes import read_count
from exporter.sources.otlp.dialects import gen_ai
from exporter.sources.otlp.dialects.base import Dialect, UsageCounts

A_WRITE_5M = "anthropic.usage.cache_creation.ephemeral_5m_input_tokens"
A_WRITE_1H = "anthropic.usage.cache_creation.ephemeral_1h_input_tokens"
SCOPE_PREFIX = "com.anthropic.sdk"


def detect(attrs: Mapping[str, Any], scope_name: str) -> bool:
    has_usage = gen_ai.A_INPUT in attrs or gen_ai.A_OUTPUT in attrs
    return has_usage and (scope_name.startswith(SCOPE_PREFIX) or A_WRITE_5M in attrs)


def usage(attrs: Mapping[str, Any]) -> UsageCounts:
    w5, w1h = read_count(attrs, A_WRITE_5M), read_count(attrs, A_WRITE_1H)
    if w5 is None and w1h is None:
        split: tuple[int | None, int | None] = (None, None)
    else:
        split = (w5 or 0, w1h or 0)
    return gen_ai.semconv_counts(attrs, write_5m=split[0], write_1h=split[1], includes_cache=True)


DIALECT = Dialect(
    name="anthropic_sdk", detect=detect, usage=usage, keys=gen_ai.KEYS | {A_WRITE_5M, A_WRITE_1H}
)
