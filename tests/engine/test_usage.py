"""exporter.engine.usage: each provider shape -> disjoint tiers; prompt total = the provider's figure.

Double-counted cache tokens are the commonest bug of this field, so every
shape asserts all five tiers *and* that the tiers add up to the prompt figure
the provider itself reported (where the shape has one).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.engine.usage import Usage, UsageError, detect_shape, normalise_usage


def tiers(u: Usage) -> tuple[int, int, int, int, int]:
    return u.fresh_input, u.cache_read, u.cache_write_5m, u.cache_write_1h, u.output


def norm(block: dict[str, Any]) -> Usage:
    found = normalise_usage(block)
    assert found is not None
    return found


# --- OpenAI chat completions: cached tokens are INSIDE prompt_tokens ----------------------------


def test_openai_chat_cached_inside_prompt() -> None:
    block = {
        "prompt_tokens": 2006,
        "completion_tokens": 300,
        "total_tokens": 2306,
        "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 64},  # inside completion_tokens
    }
    u = norm(block)
    assert u.shape == "openai_chat"
    assert tiers(u) == (86, 1920, 0, 0, 300)
    assert u.prompt_tokens == block["prompt_tokens"]


def test_openai_chat_without_details_is_all_fresh() -> None:
    u = norm({"prompt_tokens": 50, "completion_tokens": 7})
    assert tiers(u) == (50, 0, 0, 0, 7)
    assert u.prompt_tokens == 50


def test_openai_chat_null_details_is_all_fresh() -> None:
    u = norm({"prompt_tokens": 50, "completion_tokens": 7, "prompt_tokens_details": None})
    assert tiers(u) == (50, 0, 0, 0, 7)


def test_openai_chat_cached_equal_to_prompt_is_valid() -> None:
    u = norm(
        {
            "prompt_tokens": 1024,
            "completion_tokens": 1,
            "prompt_tokens_details": {"cached_tokens": 1024},
        }
    )
    assert tiers(u) == (0, 1024, 0, 0, 1)


def test_openai_chat_cached_more_than_prompt_rejected_not_clipped() -> None:
    with pytest.raises(UsageError) as info:
        normalise_usage(
            {
                "prompt_tokens": 100,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 101},
            }
        )
    assert info.value.reason == "inconsistent_usage"


@pytest.mark.parametrize("key", ["cache_write_tokens", "cache_creation_tokens"])
def test_openai_compatible_cache_write_inside_prompt(key: str) -> None:
    block = {
        "prompt_tokens": 5000,
        "completion_tokens": 40,
        "prompt_tokens_details": {"cached_tokens": 1000, key: 3000},
    }
    u = norm(block)
    assert tiers(u) == (1000, 1000, 3000, 0, 40)
    assert u.prompt_tokens == 5000


def test_openai_compatible_cached_plus_written_over_prompt_rejected() -> None:
    with pytest.raises(UsageError) as info:
        normalise_usage(
            {
                "prompt_tokens": 100,
                "prompt_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 41},
            }
        )
    assert info.value.reason == "inconsistent_usage"


# --- DeepSeek: hit + miss = prompt --------------------------------------------------------------


def test_deepseek_hit_miss() -> None:
    block = {
        "prompt_tokens": 1500,
        "completion_tokens": 80,
        "prompt_cache_hit_tokens": 1280,
        "prompt_cache_miss_tokens": 220,
    }
    u = norm(block)
    assert u.shape == "openai_chat"
    assert tiers(u) == (220, 1280, 0, 0, 80)
    assert u.prompt_tokens == 1500
    assert u.fresh_input == block["prompt_cache_miss_tokens"]


def test_deepseek_with_matching_cached_tokens_too() -> None:
    # newer DeepSeek responses carry both dialects; the same figure is not counted twice
    u = norm(
        {
            "prompt_tokens": 1500,
            "completion_tokens": 80,
            "prompt_cache_hit_tokens": 1280,
            "prompt_cache_miss_tokens": 220,
            "prompt_tokens_details": {"cached_tokens": 1280},
        }
    )
    assert tiers(u) == (220, 1280, 0, 0, 80)


@pytest.mark.parametrize(
    "block",
    [
        {"prompt_tokens": 1500, "prompt_cache_hit_tokens": 1280, "prompt_cache_miss_tokens": 221},
        {"prompt_tokens": 1000, "prompt_cache_hit_tokens": 1280},
        {
            "prompt_tokens": 1500,
            "prompt_cache_hit_tokens": 1280,
            "prompt_tokens_details": {"cached_tokens": 1000},
        },
    ],
    ids=["hit+miss!=prompt", "hit>prompt", "hit!=cached"],
)
def test_deepseek_contradictions_rejected(block: dict[str, Any]) -> None:
    with pytest.raises(UsageError) as info:
        normalise_usage(block)
    assert info.value.reason == "inconsistent_usage"


# --- OpenAI responses API -----------------------------------------------------------------------


def test_openai_responses_cached_inside_input() -> None:
    block = {
        "input_tokens": 3000,
        "output_tokens": 500,
        "total_tokens": 3500,
        "input_tokens_details": {"cached_tokens": 2048},
        "output_tokens_details": {"reasoning_tokens": 128},
    }
    u = norm(block)
    assert u.shape == "openai_responses"
    assert tiers(u) == (952, 2048, 0, 0, 500)
    assert u.prompt_tokens == block["input_tokens"]


def test_openai_responses_cached_over_input_rejected() -> None:
    with pytest.raises(UsageError) as info:
        normalise_usage(
            {"input_tokens": 10, "output_tokens": 1, "input_tokens_details": {"cached_tokens": 11}}
        )
    assert info.value.reason == "inconsistent_usage"


# --- Anthropic: cache tokens are OUTSIDE input_tokens -------------------------------------------


def test_anthropic_cache_outside_input_without_split() -> None:
    block = {
        "input_tokens": 21,
        "cache_read_input_tokens": 1800,
        "cache_creation_input_tokens": 400,
        "output_tokens": 250,
    }
    u = norm(block)
    assert u.shape == "anthropic"
    assert tiers(u) == (21, 1800, 400, 0, 250)  # all creation as 5m when there is no split
    assert u.prompt_tokens == 21 + 1800 + 400  # the provider's prompt = the sum of its three fields


def test_anthropic_with_5m_1h_split() -> None:
    block = {
        "input_tokens": 12,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 3000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
        "output_tokens": 90,
    }
    u = norm(block)
    assert tiers(u) == (12, 0, 1000, 2000, 90)
    assert u.prompt_tokens == 12 + 3000
    assert u.cache_write == block["cache_creation_input_tokens"]


def test_anthropic_split_without_total() -> None:
    u = norm(
        {
            "input_tokens": 5,
            "output_tokens": 1,
            "cache_creation": {"ephemeral_1h_input_tokens": 700},
        }
    )
    assert tiers(u) == (5, 0, 0, 700, 1)


def test_anthropic_split_inconsistent_with_total_rejected() -> None:
    with pytest.raises(UsageError) as info:
        normalise_usage(
            {
                "input_tokens": 12,
                "cache_creation_input_tokens": 3000,
                "output_tokens": 1,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": 1000,
                    "ephemeral_1h_input_tokens": 1999,
                },
            }
        )
    assert info.value.reason == "inconsistent_usage"


def test_anthropic_empty_split_object_means_all_5m() -> None:
    u = norm(
        {
            "input_tokens": 3,
            "cache_creation_input_tokens": 40,
            "cache_creation": {},
            "output_tokens": 2,
        }
    )
    assert tiers(u) == (3, 0, 40, 0, 2)


# --- Gemini: cached INSIDE the prompt, thoughts billed as output -------------------------------


def test_gemini_thoughts_are_output_cached_inside_prompt() -> None:
    block = {
        "promptTokenCount": 4100,
        "cachedContentTokenCount": 4000,
        "candidatesTokenCount": 150,
        "thoughtsTokenCount": 600,
        "totalTokenCount": 4850,
    }
    u = norm(block)
    assert u.shape == "gemini"
    assert tiers(u) == (100, 4000, 0, 0, 750)
    assert u.prompt_tokens == block["promptTokenCount"]
    assert u.prompt_tokens + u.output == block["totalTokenCount"]


def test_gemini_cached_over_prompt_rejected() -> None:
    with pytest.raises(UsageError) as info:
        normalise_usage(
            {"promptTokenCount": 10, "cachedContentTokenCount": 11, "candidatesTokenCount": 1}
        )
    assert info.value.reason == "inconsistent_usage"


# --- Bedrock Converse: cache outside inputTokens ------------------------------------------------


def test_bedrock_converse() -> None:
    block = {
        "inputTokens": 30,
        "outputTokens": 200,
        "totalTokens": 3730,
        "cacheReadInputTokens": 2500,
        "cacheWriteInputTokens": 1000,
    }
    u = norm(block)
    assert u.shape == "bedrock_converse"
    assert tiers(u) == (30, 2500, 1000, 0, 200)
    assert u.prompt_tokens + u.output == block["totalTokens"]


# --- counts and blocks ----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [True, False, 5.0, 1e308, -1, 2**53, "12", [3], {"n": 1}])
def test_counts_must_be_non_negative_json_integers(bad: Any) -> None:
    with pytest.raises(UsageError) as info:
        normalise_usage({"prompt_tokens": bad, "completion_tokens": 1})
    assert info.value.reason == "invalid_count"
    assert "prompt_tokens" in info.value.detail


@pytest.mark.parametrize("block", [[], "usage", 3, True])
def test_usage_not_an_object(block: Any) -> None:
    with pytest.raises(UsageError) as info:
        normalise_usage(block)
    assert info.value.reason == "invalid_usage"


def test_details_not_an_object() -> None:
    with pytest.raises(UsageError) as info:
        normalise_usage({"prompt_tokens": 5, "prompt_tokens_details": [1]})
    assert info.value.reason == "invalid_usage"


def test_unknown_shape_is_none() -> None:
    assert normalise_usage({"tokens": 5, "whatever": 1}) is None
    assert detect_shape({}) is None


# --- properties -----------------------------------------------------------------------------------

counts = st.integers(min_value=0, max_value=10**7)


@given(prompt=counts, cached=counts, written=counts, out=counts)
def test_openai_chat_tiers_add_up_or_reject(
    prompt: int, cached: int, written: int, out: int
) -> None:
    block = {
        "prompt_tokens": prompt,
        "completion_tokens": out,
        "prompt_tokens_details": {"cached_tokens": cached, "cache_write_tokens": written},
    }
    if cached + written > prompt:
        with pytest.raises(UsageError):
            normalise_usage(block)
        return
    u = norm(block)
    assert u.prompt_tokens == prompt
    assert min(tiers(u)) >= 0
    assert (u.cache_read, u.cache_write_5m, u.output) == (cached, written, out)


@given(fresh=counts, read=counts, w5=counts, w1h=counts, out=counts)
def test_anthropic_tiers_are_the_fields(fresh: int, read: int, w5: int, w1h: int, out: int) -> None:
    u = norm(
        {
            "input_tokens": fresh,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": w5 + w1h,
            "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1h},
            "output_tokens": out,
        }
    )
    assert tiers(u) == (fresh, read, w5, w1h, out)
    assert u.prompt_tokens == fresh + read + w5 + w1h


@given(prompt=counts, cached=counts, cand=counts, thoughts=counts)
def test_gemini_tiers_add_up_or_reject(prompt: int, cached: int, cand: int, thoughts: int) -> None:
    block = {
        "promptTokenCount": prompt,
        "cachedContentTokenCount": cached,
        "candidatesTokenCount": cand,
        "thoughtsTokenCount": thoughts,
    }
    if cached > prompt:
        with pytest.raises(UsageError):
            normalise_usage(block)
        return
    u = norm(block)
    assert u.prompt_tokens == prompt
    assert u.output == cand + thoughts
