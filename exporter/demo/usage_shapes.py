"""Providers' usage blocks, each in its native shape, for the simulated turns.

Anthropic (reads + 5m writes, 1h writes of the system prompt for tenants that
ask for it), OpenAI chat and responses (``cached_tokens`` inside the prompt
count, 128-token steps from 1024), Gemini (``cachedContentTokenCount`` inside
``promptTokenCount``, thoughts apart), Bedrock Converse
(``cacheRead``/``cacheWriteInputTokens`` beside ``inputTokens``), DeepSeek
(``prompt_cache_hit/miss_tokens``, 64-token steps), and a plain OpenAI-style
block for self-hosted models. Changes when a provider's shape does.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from exporter.demo.population import ModelSpec


@dataclass
class CacheState:
    """What one turn's cache accounting needs beyond its sizes.

    ``warm_1h`` is shared by all sessions of a simulator: (tenant, model) -> when
    the system prompt written to the 1h cache expires.
    """

    tenant: str
    ttl_1h: bool
    warm_1h: dict[tuple[str, str], float]


def usage_block(
    rng: random.Random,
    spec: ModelSpec,
    cache: CacheState,
    prompt: int,
    system: int,
    prefix: int | None,
    output: int,
    ts: float,
) -> dict[str, Any]:
    """The provider's usage block in its native shape, consistent by construction.

    ``prompt`` is what the provider bills as prompt, ``system`` the system prompt's
    share of it, ``prefix`` the previous turn's prompt when it is still cached.
    Draws from ``rng`` in a fixed order: the simulator's output depends on it.
    """
    shape = spec.shape
    if shape in ("anthropic", "bedrock"):
        tail = min(prompt, rng.randint(1, 12))  # after the last cache breakpoint
        read = 0
        w1h = 0
        if prompt >= spec.min_cache:
            key = (cache.tenant, spec.model)
            if prefix is not None and prefix >= spec.min_cache:
                read = min(prefix, prompt - tail)
            elif cache.ttl_1h and cache.warm_1h.get(key, 0.0) > ts:
                read = min(
                    system, prompt - tail
                )  # another session left the system prompt in the 1h cache
            elif cache.ttl_1h:
                w1h = min(system, prompt - tail)
                cache.warm_1h[key] = ts + 3600
        write = prompt - tail - read - w1h if prompt >= spec.min_cache else 0
        fresh = prompt - read - write - w1h
        if shape == "bedrock":
            # Converse reports one write figure (the exporter reads it as 5m).
            return {
                "inputTokens": fresh,
                "outputTokens": output,
                "totalTokens": prompt + output,
                "cacheReadInputTokens": read,
                "cacheWriteInputTokens": write + w1h,
            }
        block: dict[str, Any] = {
            "input_tokens": fresh,
            "cache_creation_input_tokens": write + w1h,
            "cache_read_input_tokens": read,
            "output_tokens": output,
        }
        if cache.ttl_1h or rng.random() < 0.5:  # newer SDKs report the split
            block["cache_creation"] = {
                "ephemeral_5m_input_tokens": write,
                "ephemeral_1h_input_tokens": w1h,
            }
        return block
    cached = 0
    if prefix is not None and prefix >= spec.min_cache and shape != "plain":
        step = 64 if shape == "deepseek" else 128
        cached = min(prefix, prompt) // step * step
        if shape == "gemini" and rng.random() < 0.15:
            cached = 0  # implicit caching is best effort
    if shape == "openai_chat":
        return {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0},
        }
    if shape == "openai_responses":
        reasoning = int(output * rng.uniform(0.2, 0.7))
        return {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": prompt + output,
        }
    if shape == "gemini":
        thoughts = int(output * rng.uniform(0.5, 2.0)) if spec.thinking else 0
        block = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": output,
            "totalTokenCount": prompt + output + thoughts,
        }
        if cached:
            block["cachedContentTokenCount"] = cached
        if thoughts:
            block["thoughtsTokenCount"] = thoughts
        return block
    if shape == "deepseek":
        return {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
            "prompt_cache_hit_tokens": cached,
            "prompt_cache_miss_tokens": prompt - cached,
        }
    return {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": prompt + output,
    }


__all__ = ["CacheState", "usage_block"]
