"""``pydantic_ai``: spans of pydantic-ai's own instrumentation (and its gateway).

Scope ``pydantic-ai``/``pydantic_ai``, or ``gen_ai.usage.cache_read_tokens``
/ ``cache_write_tokens`` (pydantic-ai's usage names, also emitted by the
Pydantic AI gateway). ``gen_ai.usage.input_tokens`` INCLUDES cache reads and
writes: pydantic-ai's Anthropic mapping sums ``input_tokens +
cache_creation_input_tokens + cache_read_input_tokens`` ("maintains
request_tokens as the count of all input tokens, with cached counts as
details"), and OpenAI's ``prompt_tokens`` already includes cached tokens.
Older versions put provider details under ``gen_ai.usage.details.*``
(``cache_read_input_tokens``, ``cache_creation_input_tokens``, ``cached_tokens``).
The gen_ai cache names are read first, then these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.sources.otlp.dialects import gen_ai
from exporter.sources.otlp.dialects.base import counted

PAI_CACHE_READ_KEYS = (
    "gen_ai.usage.cache_read_tokens",
    "gen_ai.usage.details.cache_read_tokens",
    "gen_ai.usage.details.cache_read_input_tokens",
    "gen_ai.usage.details.cached_tokens",
)
PAI_CACHE_WRITE_KEYS = (
    "gen_ai.usage.cache_write_tokens",
    "gen_ai.usage.details.cache_write_tokens",
    "gen_ai.usage.details.cache_creation_input_tokens",
)
_SCOPES = ("pydantic-ai", "pydantic_ai")


def detect(attrs: Mapping[str, Any], scope_name: str) -> bool:
    if PAI_CACHE_READ_KEYS[0] in attrs or PAI_CACHE_WRITE_KEYS[0] in attrs:
        return True
    has_gen_ai = gen_ai.A_INPUT in attrs or gen_ai.A_OUTPUT in attrs
    return has_gen_ai and scope_name.lower().startswith(_SCOPES)


# the gen_ai cache names first, then pydantic-ai's own
COUNTS = gen_ai.COUNTS._replace(cache_read=gen_ai.CACHE_READ_KEYS + PAI_CACHE_READ_KEYS,
                                cache_write=gen_ai.CACHE_WRITE_KEYS + PAI_CACHE_WRITE_KEYS)
DIALECT = counted("pydantic_ai", detect, COUNTS, includes_cache=True)
