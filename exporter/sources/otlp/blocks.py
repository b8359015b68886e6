"""A span's usage counts -> the record's usage block and completeness flags. Pure.

The rules (the cache added back to an input that excludes it, the total
deciding when the dialect does not know) are in ``exporter.sources.otlp.mapping``.
"""

from __future__ import annotations

from typing import Any

from exporter.sources.otlp.attributes import c_reads
from exporter.sources.otlp.dialects import Dialect, UsageCounts
from exporter.sources.otlp.dialects.base import (
    MISSING_CACHE_DETAIL,
    MISSING_CACHE_TTL,
    MISSING_INCLUSIVE,
    MISSING_USAGE_OBJECT,
    RESPONSE_CACHE_HIT,
    SOURCE_FLAGS,
)


def usage_block(
    counts: UsageCounts, dialect: Dialect, forced: bool | None
) -> tuple[dict[str, Any], list[str]]:
    """The usage block and what it lacks for exact dollars (``SOURCE_FLAGS``, in that order).

    OpenAI-shaped, with the cache added back to an input that excludes it; when
    the span gives the 5m/1h split of cache writes, Anthropic-shaped (disjoint
    tiers) instead, the one shape that carries the split.
    """
    inp, out, read, write, total, w5, w1h, stated, given = counts
    split = w5 is not None and w1h is not None
    if split and write is None:
        write = (w5 or 0) + (w1h or 0)
    added: list[str] = []  # flags this function adds to the span's own (``given``)
    cached = (read or 0) + (write or 0)
    if inp is not None and cached:
        includes_cache = forced
        if includes_cache is None:
            includes_cache = stated
        if includes_cache is None:
            if total is not None and out is not None and inp + out == total:
                includes_cache = True
            elif total is not None and out is not None and inp + cached + out == total:
                includes_cache = False
            else:
                includes_cache = dialect.input_includes_cache
                added.append(MISSING_INCLUSIVE)
        if not includes_cache:
            inp += cached
    if write and not (split and (w5 or 0) + (w1h or 0) == write):
        added.append(MISSING_CACHE_TTL)
        split = False
    if not given and len(added) < 2:  # the common cases: nothing lacking, or one thing
        ordered = added
    else:
        flags = set(given)
        flags.update(added)
        ordered = [flag for flag in SOURCE_FLAGS if flag in flags]
    if split and inp is not None and inp >= cached:
        return {
            "input_tokens": inp - cached,
            "cache_read_input_tokens": read or 0,
            "cache_creation_input_tokens": write or 0,
            "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1h},
            "output_tokens": out or 0,
        }, ordered
    usage: dict[str, Any] = {}
    if inp is not None:
        usage["prompt_tokens"] = inp
    if out is not None:
        usage["completion_tokens"] = out
    if read is not None:
        if write is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": read, "cache_write_tokens": write}
        else:
            usage["prompt_tokens_details"] = {"cached_tokens": read}
    elif write is not None:
        usage["prompt_tokens_details"] = {"cache_write_tokens": write}
    return usage, ordered


usage_block_python = usage_block  # the twin of the C block (attributes.c_reads), and its fallback
if c_reads is not None:
    c_reads.bind("usage_block", usage_block)
    c_reads.bind("MISSING_INCLUSIVE", MISSING_INCLUSIVE)
    c_reads.bind("MISSING_CACHE_TTL", MISSING_CACHE_TTL)
    usage_block = c_reads.usage_block


# The most consequential first: the one a record carries when it lacks several things.
COMPLETENESS_ORDER = (
    MISSING_USAGE_OBJECT,
    MISSING_CACHE_DETAIL,
    MISSING_INCLUSIVE,
    MISSING_CACHE_TTL,
)


KNOWN_FLAGS = _KNOWN = frozenset(SOURCE_FLAGS)


def completeness(flags: list[str]) -> list[str]:
    """At most one completeness flag per record (``COMPLETENESS_ORDER``), so that the flagged
    share of requests is a plain sum; ``response_cache_hit`` is not one of them."""
    if len(flags) == 1 and flags[0] in _KNOWN:  # the common case: one flag, kept as it is
        return [flags[0]]
    out = [flag for flag in COMPLETENESS_ORDER if flag in flags][:1]
    if RESPONSE_CACHE_HIT in flags:
        out.append(RESPONSE_CACHE_HIT)
    return out


__all__ = ["COMPLETENESS_ORDER", "KNOWN_FLAGS", "completeness", "usage_block", "usage_block_python"]
