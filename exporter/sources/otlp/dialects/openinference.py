"""``openinference``: Arize OpenInference instrumentors.

``llm.token_count.prompt``/``completion``/``total``,
``llm.token_count.prompt_details.cache_read``/``cache_write``,
``llm.model_name``, ``llm.provider``/``llm.system``. The prompt count INCLUDES
cache reads and writes (the Anthropic and Bedrock instrumentors sum
``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``).
Captured (openinference-instrumentation-anthropic 3.1.0, -openai 0.1.66;
tests/fixtures/dialects/openinference_*): Anthropic 150 fresh + 2000 read +
1000 written -> prompt 3150, cache_read 2000, cache_write 1000, total 3230;
OpenAI chat and Responses prompt 3200 with cache_read 3000. No response id
(the dedupe id is ``<trace>:<span>``) and no 5m/1h split of cache writes
(flagged ``usage_no_cache_ttl`` when there are writes).
Model, provider and span kind (``openinference.span.kind``) are read by the
mapping for every span.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.sources.otlp.dialects.base import CountNames, counted

A_OI_PROMPT = "llm.token_count.prompt"
A_OI_COMPLETION = "llm.token_count.completion"
A_OI_TOTAL = "llm.token_count.total"
A_OI_CACHE_READ = "llm.token_count.prompt_details.cache_read"
A_OI_CACHE_WRITE = "llm.token_count.prompt_details.cache_write"


def detect(attrs: Mapping[str, Any], scope_name: str) -> bool:
    return (
        A_OI_PROMPT in attrs
        or A_OI_COMPLETION in attrs
        or A_OI_CACHE_READ in attrs
        or A_OI_CACHE_WRITE in attrs
    )


COUNTS = CountNames((A_OI_PROMPT,), (A_OI_COMPLETION,), (A_OI_CACHE_READ,), (A_OI_CACHE_WRITE,), (A_OI_TOTAL,))
DIALECT = counted("openinference", detect, COUNTS, includes_cache=True)
