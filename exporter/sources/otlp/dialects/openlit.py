"""``openlit``: OpenLIT's instrumentations.

Captured (openlit 1.45.0; tests/fixtures/dialects/openlit_*): scope
``openlit.instrumentation.<provider>`` (no scope version), ``gen_ai.provider.name``,
``gen_ai.usage.input_tokens``/``output_tokens``, ``gen_ai.usage.cache_read.input_tokens``,
``gen_ai.usage.cache_creation.input_tokens`` and ``gen_ai.response.id``; no total
(``gen_ai.client.token.usage`` is input + output whatever the input means, so it
decides nothing). The input count is the PROVIDER's own: with Anthropic it is
Anthropic's exclusive ``input_tokens`` (150 fresh + 2000 read + 1000 written ->
150), with OpenAI (chat and Responses) it is ``prompt_tokens``/``input_tokens``,
which include the cached tokens (3200 with 3000 cached). Other providers: not
captured, so the span's total or the convention decides and the record is
flagged ``usage_inclusive_assumed`` when it has cache counts. No 5m/1h split
of cache writes (flagged ``usage_no_cache_ttl`` when there are writes).

Known limit: with Anthropic STREAMING (``gen_ai.request.stream`` true, both
``stream=True`` and ``messages.stream()``) OpenLIT reports both cache counts as
0 whatever the call read or wrote (input 150 of 150 + 2000 read + 1000
written): only the fresh input is known, the record is flagged
``usage_no_cache_detail`` and its spend is a lower bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.sources.otlp.attributes import A_PROVIDER, A_SYSTEM
from exporter.sources.otlp.dialects import gen_ai
from exporter.sources.otlp.dialects.base import MISSING_CACHE_DETAIL, Dialect, UsageCounts

SCOPE_PREFIX = "openlit"
A_STREAM = "gen_ai.request.stream"
EXCLUSIVE_PROVIDERS = frozenset({"anthropic"})
INCLUSIVE_PROVIDERS = frozenset({"openai", "azure.ai.openai", "az.ai.openai"})


def detect(attrs: Mapping[str, Any], scope_name: str) -> bool:
    has_usage = gen_ai.A_INPUT in attrs or gen_ai.A_OUTPUT in attrs
    return has_usage and scope_name.startswith(SCOPE_PREFIX)


def _provider(attrs: Mapping[str, Any]) -> str:
    for key in (A_PROVIDER, A_SYSTEM):
        value = attrs.get(key)
        if isinstance(value, str) and value:
            return value.lower()
    return ""


def usage(attrs: Mapping[str, Any]) -> UsageCounts:
    provider = _provider(attrs)
    includes: bool | None = None
    flags: tuple[str, ...] = ()
    if provider in EXCLUSIVE_PROVIDERS:
        includes = False
        if attrs.get(A_STREAM) is True:
            flags = (MISSING_CACHE_DETAIL,)
    elif provider in INCLUSIVE_PROVIDERS:
        includes = True
    return gen_ai.semconv_counts(attrs, includes_cache=includes, flags=flags)


DIALECT = Dialect(name="openlit", detect=detect, usage=usage, keys=gen_ai.KEYS | {A_STREAM})
