"""``langfuse``: Langfuse generation observations (Langfuse SDK v3+, OTel based).

Captured (langfuse 5.0.4; tests/fixtures/dialects/langfuse_*): scope
``langfuse-sdk``, ``langfuse.observation.type`` ``generation``,
``langfuse.observation.model.name`` and ``langfuse.observation.usage_details``,
a JSON object string; no provider, no response id (the dedupe id is the
span's ``<trace>:<span>``). The keys of ``usage_details`` are whatever the
integration or the user passed:

- Langfuse's OpenAI integration passes OpenAI's usage as is: chat
  (``prompt_tokens`` INCLUDING ``prompt_tokens_details.cached_tokens``) or
  Responses (``input_tokens`` including ``input_tokens_details.cached_tokens``);
- Langfuse's own usage types (``input``, ``output``, ``cache_read_input_tokens``,
  ``cache_creation_input_tokens``, ``cache_creation_5m_input_tokens`` /
  ``cache_creation_1h_input_tokens``, as captured for an Anthropic call) are
  disjoint: ``input`` EXCLUDES the cache (Langfuse prices each type apart);
- Anthropic's own usage (``input_tokens`` with ``cache_read_input_tokens``):
  exclusive, ``cache_creation.ephemeral_5m/1h_input_tokens`` the split.

An unreadable ``usage_details`` (not JSON, not an object, over 16 KiB) counts
the generation without usage, flagged ``usage_object_unparsed``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from exporter.sources.otlp.attributes import read_count
from exporter.sources.otlp.dialects.base import (
    MISSING_USAGE_OBJECT,
    Dialect,
    UsageCounts,
)

A_TYPE = "langfuse.observation.type"
A_USAGE = "langfuse.observation.usage_details"
A_MODEL = "langfuse.observation.model.name"
MODEL_TYPES = frozenset({"generation", "embedding"})
MAX_USAGE_CHARS = 16384


def detect(attrs: Mapping[str, Any], scope_name: str) -> bool:
    kind = attrs.get(A_TYPE)
    return isinstance(kind, str) and kind.lower() in MODEL_TYPES


def _sub(block: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = block.get(key)
    return value if isinstance(value, dict) else {}


def _split(block: Mapping[str, Any], k5: str, k1h: str) -> tuple[int | None, int | None]:
    if k5 not in block and k1h not in block:
        return None, None
    return read_count(block, k5) or 0, read_count(block, k1h) or 0


def counts_from_details(block: Mapping[str, Any]) -> UsageCounts:
    """``usage_details`` (decoded) -> counts, by the keys it carries."""
    if "prompt_tokens" in block or "completion_tokens" in block:  # OpenAI chat, as is
        details = _sub(block, "prompt_tokens_details")
        return UsageCounts(
            read_count(block, "prompt_tokens"),
            read_count(block, "completion_tokens"),
            read_count(details, "cached_tokens"),
            read_count(details, "cache_write_tokens"),
            read_count(block, "total_tokens"),
            includes_cache=True,
        )
    if "input_tokens" in block and (
        "cache_read_input_tokens" in block or "cache_creation_input_tokens" in block
    ):  # Anthropic's own usage: exclusive
        w5, w1h = _split(_sub(block, "cache_creation"), "ephemeral_5m_input_tokens",
                         "ephemeral_1h_input_tokens")
        return UsageCounts(
            read_count(block, "input_tokens"),
            read_count(block, "output_tokens"),
            read_count(block, "cache_read_input_tokens"),
            read_count(block, "cache_creation_input_tokens"),
            None,
            write_5m=w5,
            write_1h=w1h,
            includes_cache=False,
        )
    if "input_tokens" in block or "output_tokens" in block:  # OpenAI Responses, as is
        return UsageCounts(
            read_count(block, "input_tokens"),
            read_count(block, "output_tokens"),
            read_count(_sub(block, "input_tokens_details"), "cached_tokens"),
            None,
            read_count(block, "total_tokens"),
            includes_cache=True,
        )
    # Langfuse's own usage types: disjoint
    w5, w1h = _split(block, "cache_creation_5m_input_tokens", "cache_creation_1h_input_tokens")
    read = read_count(block, "cache_read_input_tokens")
    if read is None:
        read = read_count(block, "input_cache_read")
    write = read_count(block, "cache_creation_input_tokens")
    if write is None:
        write = read_count(block, "input_cache_creation")
    return UsageCounts(
        read_count(block, "input"),
        read_count(block, "output"),
        read,
        write,
        None,
        write_5m=w5,
        write_1h=w1h,
        includes_cache=False,
    )


def usage(attrs: Mapping[str, Any]) -> UsageCounts:
    raw = attrs.get(A_USAGE)
    if raw is None:
        return UsageCounts(None, None, None, None, None)
    block: Any = None
    if isinstance(raw, str) and len(raw) <= MAX_USAGE_CHARS:
        try:
            block = orjson.loads(raw)
        except orjson.JSONDecodeError:
            block = None
    if not isinstance(block, dict):
        return UsageCounts(None, None, None, None, None, flags=(MISSING_USAGE_OBJECT,))
    return counts_from_details(block)


DIALECT = Dialect(
    name="langfuse",
    detect=detect,
    usage=usage,
    input_includes_cache=False,
    keys=frozenset({A_TYPE, A_USAGE, A_MODEL}),
    detect_reads=frozenset({A_TYPE}),
)
