"""``gen_ai_legacy``: the GenAI conventions before the prompt/completion rename.

``gen_ai.usage.prompt_tokens``/``completion_tokens`` (OpenLLMetry before the
rename; prompt includes cached tokens as in ``gen_ai``), same cache names as ``gen_ai``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.sources.otlp.dialects import gen_ai
from exporter.sources.otlp.dialects.base import counted

A_PROMPT = "gen_ai.usage.prompt_tokens"
A_COMPLETION = "gen_ai.usage.completion_tokens"


def detect(attrs: Mapping[str, Any], scope_name: str) -> bool:
    return A_PROMPT in attrs or A_COMPLETION in attrs


DIALECT = counted(
    "gen_ai_legacy", detect, gen_ai.COUNTS._replace(input=(A_PROMPT,), output=(A_COMPLETION,)), keys=gen_ai.KEYS
)
