"""``gen_ai_legacy``: the GenAI conventions before the prompt/completion rename.

``gen_ai.usage.prompt_tokens``/``completion_tokens`` (OpenLLMetry before the
rename; prompt includes cached tokens as in ``gen_ai``), same cache names as ``gen_ai``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.sources.otlp.attributes import first_count, read_count
from exporter.sources.otlp.dialects import gen_ai
from exporter.sources.otlp.dialects.base import Dialect, UsageCounts

A_PROMPT = "gen_ai.usage.prompt_tokens"
A_COMPLETION = "gen_ai.usage.completion_tokens"


def detect(attrs: Mapping[str, Any], scope_name: str) -> bool:
    return A_PROMPT in attrs or A_COMPLETION in attrs


def usage(attrs: Mapping[str, Any]) -> UsageCounts:
    inp, out = read_count(attrs, A_PROMPT), read_count(attrs, A_COMPLETION)
    read = first_count(attrs, gen_ai.CACHE_READ_KEYS)
    write = first_count(attrs, gen_ai.CACHE_WRITE_KEYS)
    total = read_count(attrs, gen_ai.A_TOTAL)
    if total is None:
        total = read_count(attrs, gen_ai.A_LEGACY_TOTAL)
    return UsageCounts(inp, out, read, write, total)


DIALECT = Dialect(
    name="gen_ai_legacy", detect=detect, usage=usage, keys=gen_ai.KEYS | {A_PROMPT, A_COMPLETION}
)
