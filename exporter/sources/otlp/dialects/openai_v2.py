"""``openai_v2``: the official ``opentelemetry-instrumentation-openai-v2``.

Captured (2.4b0 with opentelemetry-util-genai 1.1b0; tests/fixtures/dialects/otel_openai_v2*):
scope ``opentelemetry.util.genai.handler`` (the shared GenAI handler; older
releases used ``opentelemetry.instrumentation.openai_v2``), span ``chat <model>``,
``gen_ai.usage.input_tokens`` (OpenAI's ``prompt_tokens``: cached tokens included)
and ``gen_ai.usage.output_tokens``, ``gen_ai.response.id``, and NO cache
attribute, in both semconv modes: 3000 cached tokens of 3200 look exactly like
3200 fresh ones. Counting everything as fresh is the only honest reading; the
record is flagged ``usage_no_cache_detail`` (its input dollars are an upper
bound). A cache count, should a later release add one, is read. The Responses
API is not instrumented at all (no span: such calls are not counted).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.sources.otlp.dialects import gen_ai
from exporter.sources.otlp.dialects.base import MISSING_CACHE_DETAIL, Dialect, UsageCounts

SCOPES = ("opentelemetry.util.genai", "opentelemetry.instrumentation.openai_v2")


def detect(attrs: Mapping[str, Any], scope_name: str) -> bool:
    has_usage = gen_ai.A_INPUT in attrs or gen_ai.A_OUTPUT in attrs
    return has_usage and scope_name.startswith(SCOPES)


def usage(attrs: Mapping[str, Any]) -> UsageCounts:
    counts = gen_ai.semconv_counts(attrs, includes_cache=True)
    if counts.cache_read is None and counts.cache_write is None:
        return counts._replace(flags=(MISSING_CACHE_DETAIL,))
    return counts


DIALECT = Dialect(name="openai_v2", detect=detect, usage=usage, keys=gen_ai.KEYS)
