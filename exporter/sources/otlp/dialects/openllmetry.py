"""``openllmetry``: Traceloop's OpenLLMetry instrumentations.

Captured (opentelemetry-instrumentation-openai / -anthropic 0.62.4;
tests/fixtures/dialects/openllmetry_*): scopes ``opentelemetry.instrumentation.openai.v1``
and ``opentelemetry.instrumentation.anthropic`` (exactly: the namespace is shared
with the official contrib instrumentations), the current
gen_ai names with ``gen_ai.usage.total_tokens`` and ``gen_ai.response.id``.
``gen_ai.usage.input_tokens`` INCLUDES cache reads and writes for both
providers (Anthropic: 150 + 2000 + 1000 -> 3150, total 3230), OpenAI's cached
tokens under ``gen_ai.usage.cache_read.input_tokens``, Anthropic's writes under
``gen_ai.usage.cache_creation.input_tokens`` without the 5m/1h split (flagged
``usage_no_cache_ttl`` when there are writes). Known limit: with Anthropic
streaming (``stream=True`` and ``messages.stream()``) the output count is one
too high (121 for 120: the ``message_start`` event's output count is added to
the final one); nothing on the span tells it, so it is counted as reported.
Older releases used ``gen_ai.usage.prompt_tokens`` (``gen_ai_legacy``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.sources.otlp.dialects import gen_ai
from exporter.sources.otlp.dialects.base import counted

# Only the scopes captured: the opentelemetry.instrumentation.* namespace is shared with the
# official contrib instrumentations (openai_v2, botocore, google_genai, vertexai...), which
# stay ``gen_ai``.
SCOPES = ("opentelemetry.instrumentation.openai.v1", "opentelemetry.instrumentation.anthropic")
_EXACT = frozenset({"opentelemetry.instrumentation.openai", *SCOPES})


def detect(attrs: Mapping[str, Any], scope_name: str) -> bool:
    has_usage = gen_ai.A_INPUT in attrs or gen_ai.A_OUTPUT in attrs
    return has_usage and (scope_name in _EXACT or scope_name.startswith(SCOPES[0]))


DIALECT = counted("openllmetry", detect, gen_ai.COUNTS, includes_cache=True)
