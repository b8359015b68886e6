"""Provider usage blocks, normalised to billing tiers.

Every provider reports prompt tokens differently, and the commonest bug of
this field is counting cached tokens twice: OpenAI and Gemini report cached
tokens *inside* the prompt count, Anthropic and Bedrock report them *beside*
it. ``normalise_usage`` turns each native shape (detected by its keys) into
one ``Usage`` of disjoint tiers, so that

    provider prompt tokens = fresh_input + cache_read + cache_write_5m + cache_write_1h

holds for every shape. Contradictory numbers (cached > prompt) raise
``UsageError``: the record is rejected and counted, never clipped.
Pure functions; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec

MAX_COUNT = (1 << 53) - 1  # above this a float sum loses integers; no request is that large
# A request above this many tokens (input in all tiers, output, or a savings count) is rejected as
# ``implausible_count`` and never priced: no model takes 10M tokens in one request. Configurable
# per pipeline (``Pipeline(max_request_tokens=...)``).
DEFAULT_MAX_REQUEST_TOKENS = 10_000_000


class UsageError(ValueError):
    """A usage block that cannot be counted; ``reason`` is a bounded label value."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class Usage(msgspec.Struct, frozen=True, gc=False):
    """Disjoint billing tiers. A msgspec struct, not a frozen dataclass: built once per record, in C."""

    fresh_input: int
    cache_read: int
    cache_write_5m: int
    cache_write_1h: int
    output: int
    shape: str  # which native shape it came from, for tests and debugging

    @property
    def prompt_tokens(self) -> int:
        """All input tokens the provider billed, in any tier."""
        return self.fresh_input + self.cache_read + self.cache_write_5m + self.cache_write_1h

    @property
    def cache_write(self) -> int:
        return self.cache_write_5m + self.cache_write_1h


class OptimizerCall(msgspec.Struct, frozen=True, gc=False):
    """The optimizer's own model calls on one request (the record field ``optimizer``).

    A compressor that calls a model costs money too: its usage is priced with
    the same table and version as the request, never reported in dollars, so
    net savings keep the request's provenance. ``usage`` is None for a block of
    a shape the engine does not know (counted unpriced, never $0).
    """

    model: str
    provider: str | None
    usage: Usage | None
    service_tier: str | None = None  # as the provider billed the optimizer's call (``optimizer.service_tier``)


def count_value(value: Any, where: str) -> int:
    """A token count: a JSON integer, not a bool, not a float, 0 <= n <= 2**53-1."""
    if type(value) is int:
        if 0 <= value <= MAX_COUNT:
            return value
        # str() of an int past 4300 digits raises: name its size instead
        shown = value if value.bit_length() <= 64 else f"a {value.bit_length()}-bit integer"
        sign = "negative" if value < 0 else "too large"
        raise UsageError("invalid_count", f"{where} is {sign}: {shown}")
    if isinstance(value, bool):
        raise UsageError("invalid_count", f"{where} is a boolean, expected an integer")
    if isinstance(value, float):
        raise UsageError("invalid_count", f"{where} is not an integer: {value!r}")
    raise UsageError("invalid_count", f"{where} has type {type(value).__name__}, expected an integer")


def _get(block: Mapping[str, Any], key: str, where: str) -> int:
    """Optional count: absent or null is 0."""
    value = block.get(key)
    if value is None:
        return 0
    return count_value(value, f"{where}.{key}")


def _sub(block: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = block.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise UsageError("invalid_usage", f"{where}.{key} is not an object")
    return value


def _inconsistent(detail: str) -> UsageError:
    return UsageError("inconsistent_usage", detail)


def _openai_chat(u: Mapping[str, Any], w: str) -> Usage:
    prompt = _get(u, "prompt_tokens", w)
    completion = _get(u, "completion_tokens", w)
    details = _sub(u, "prompt_tokens_details", w)
    dw = f"{w}.prompt_tokens_details"
    cached = _get(details, "cached_tokens", dw)
    written = _get(details, "cache_write_tokens", dw) or _get(details, "cache_creation_tokens", dw)
    if "prompt_cache_hit_tokens" in u:  # DeepSeek: hit + miss = prompt
        hit = _get(u, "prompt_cache_hit_tokens", w)
        if cached and cached != hit:
            raise _inconsistent(f"{w}: cached_tokens {cached} != prompt_cache_hit_tokens {hit}")
        cached = hit
        if "prompt_cache_miss_tokens" in u:
            miss = _get(u, "prompt_cache_miss_tokens", w)
            if hit + miss != prompt:
                raise _inconsistent(f"{w}: prompt_cache_hit_tokens {hit} + miss {miss} != prompt_tokens {prompt}")
    if cached + written > prompt:
        raise _inconsistent(f"{w}: cached {cached} + cache-write {written} tokens exceed prompt_tokens {prompt}")
    return Usage(prompt - cached - written, cached, written, 0, completion, "openai_chat")


def _openai_responses(u: Mapping[str, Any], w: str) -> Usage:
    total_in = _get(u, "input_tokens", w)
    details = _sub(u, "input_tokens_details", w)
    cached = _get(details, "cached_tokens", f"{w}.input_tokens_details")
    if cached > total_in:
        raise _inconsistent(f"{w}: cached_tokens {cached} exceed input_tokens {total_in}")
    return Usage(total_in - cached, cached, 0, 0, _get(u, "output_tokens", w), "openai_responses")


def _anthropic(u: Mapping[str, Any], w: str) -> Usage:
    fresh = _get(u, "input_tokens", w)
    read = _get(u, "cache_read_input_tokens", w)
    creation = _get(u, "cache_creation_input_tokens", w)
    split = _sub(u, "cache_creation", w)
    if "ephemeral_5m_input_tokens" in split or "ephemeral_1h_input_tokens" in split:
        sw = f"{w}.cache_creation"
        w5 = _get(split, "ephemeral_5m_input_tokens", sw)
        w1h = _get(split, "ephemeral_1h_input_tokens", sw)
        if "cache_creation_input_tokens" in u and u["cache_creation_input_tokens"] is not None \
                and w5 + w1h != creation:
            raise _inconsistent(
                f"{w}: cache_creation split {w5}+{w1h} != cache_creation_input_tokens {creation}")
    else:
        w5, w1h = creation, 0
    return Usage(fresh, read, w5, w1h, _get(u, "output_tokens", w), "anthropic")


def _gemini(u: Mapping[str, Any], w: str) -> Usage:
    prompt = _get(u, "promptTokenCount", w)
    cached = _get(u, "cachedContentTokenCount", w)
    if cached > prompt:
        raise _inconsistent(f"{w}: cachedContentTokenCount {cached} exceeds promptTokenCount {prompt}")
    output = _get(u, "candidatesTokenCount", w) + _get(u, "thoughtsTokenCount", w)
    return Usage(prompt - cached, cached, 0, 0, output, "gemini")


def _bedrock(u: Mapping[str, Any], w: str) -> Usage:
    return Usage(
        _get(u, "inputTokens", w),
        _get(u, "cacheReadInputTokens", w),
        _get(u, "cacheWriteInputTokens", w),
        0,
        _get(u, "outputTokens", w),
        "bedrock_converse",
    )


def detect_shape(u: Mapping[str, Any]) -> str | None:
    """Name of the native shape of a usage block, by its keys; None when unknown."""
    if "prompt_tokens" in u or "prompt_cache_hit_tokens" in u:
        return "openai_chat"
    if "promptTokenCount" in u or "candidatesTokenCount" in u:
        return "gemini"
    if "inputTokens" in u or "outputTokens" in u:
        return "bedrock_converse"
    if "input_tokens_details" in u or "output_tokens_details" in u:
        return "openai_responses"
    if (
        "cache_read_input_tokens" in u
        or "cache_creation_input_tokens" in u
        or "cache_creation" in u
        or "input_tokens" in u
        or "output_tokens" in u
    ):
        # Anthropic, or an OpenAI responses block without details: with no cached
        # tokens both shapes give the same tiers.
        return "anthropic"
    return None


_NORMALISERS = {
    "openai_chat": _openai_chat,
    "openai_responses": _openai_responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "bedrock_converse": _bedrock,
}


def normalise_usage(block: Any, where: str = "usage") -> Usage | None:
    """Disjoint billing tiers of a provider usage block; None for an unknown shape.

    Raises ``UsageError`` for a block that is not an object, a count that is not
    a non-negative integer, or numbers that contradict each other.
    """
    if not isinstance(block, Mapping):
        raise UsageError("invalid_usage", f"{where} is {type(block).__name__}, expected an object")
    shape = detect_shape(block)
    if shape is None:
        return None
    return _NORMALISERS[shape](block, where)


_SERVICE_TIER = re.compile(r"[a-z0-9_-]{1,32}")


def service_tier_of(value: str) -> str | None:
    """A record's ``service_tier`` as priced (lower-cased; "" is absent), or None when it is no tier name.

    Bounded so it can key routes and label provenance: [a-z0-9_-], at most 32 characters.
    """
    tier = value.lower()
    return tier if _SERVICE_TIER.fullmatch(tier) else None
