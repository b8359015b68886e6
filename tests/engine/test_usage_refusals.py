"""exporter.engine.usage: a bad count in any field of any shape is refused naming its full path.

One row per field a normaliser reads: the detail must name the field where it sits in the
record (``usage.prompt_tokens_details.cached_tokens``), so an operator can find it.
"""

from __future__ import annotations

from typing import Any

import pytest

from exporter.engine.usage import UsageError, normalise_usage

ROWS: list[tuple[dict[str, Any], str]] = [
    ({"prompt_tokens": -1}, "usage.prompt_tokens"),
    ({"prompt_tokens": 1, "completion_tokens": -1}, "usage.completion_tokens"),
    ({"prompt_tokens": 1, "prompt_tokens_details": {"cached_tokens": -1}}, "usage.prompt_tokens_details.cached_tokens"),
    ({"prompt_tokens": 1, "prompt_tokens_details": {"cache_write_tokens": -1}},
     "usage.prompt_tokens_details.cache_write_tokens"),
    ({"prompt_tokens": 1, "prompt_tokens_details": {"cache_creation_tokens": -1}},
     "usage.prompt_tokens_details.cache_creation_tokens"),
    ({"prompt_tokens": 1, "prompt_cache_hit_tokens": -1}, "usage.prompt_cache_hit_tokens"),
    ({"prompt_tokens": 1, "prompt_cache_hit_tokens": 1, "prompt_cache_miss_tokens": -1},
     "usage.prompt_cache_miss_tokens"),
    ({"input_tokens": -1, "input_tokens_details": {}}, "usage.input_tokens"),
    ({"input_tokens": 1, "input_tokens_details": {"cached_tokens": -1}}, "usage.input_tokens_details.cached_tokens"),
    ({"input_tokens": 1, "input_tokens_details": {}, "output_tokens": -1}, "usage.output_tokens"),
    ({"input_tokens": -1}, "usage.input_tokens"),
    ({"input_tokens": 1, "cache_read_input_tokens": -1}, "usage.cache_read_input_tokens"),
    ({"input_tokens": 1, "cache_creation_input_tokens": -1}, "usage.cache_creation_input_tokens"),
    ({"input_tokens": 1, "cache_creation": {"ephemeral_5m_input_tokens": -1}},
     "usage.cache_creation.ephemeral_5m_input_tokens"),
    ({"input_tokens": 1, "cache_creation": {"ephemeral_1h_input_tokens": -1}},
     "usage.cache_creation.ephemeral_1h_input_tokens"),
    ({"input_tokens": 1, "output_tokens": -1}, "usage.output_tokens"),
    ({"promptTokenCount": -1}, "usage.promptTokenCount"),
    ({"promptTokenCount": 1, "cachedContentTokenCount": -1}, "usage.cachedContentTokenCount"),
    ({"promptTokenCount": 1, "candidatesTokenCount": -1}, "usage.candidatesTokenCount"),
    ({"promptTokenCount": 1, "thoughtsTokenCount": -1}, "usage.thoughtsTokenCount"),
    ({"inputTokens": -1}, "usage.inputTokens"),
    ({"inputTokens": 1, "cacheReadInputTokens": -1}, "usage.cacheReadInputTokens"),
    ({"inputTokens": 1, "cacheWriteInputTokens": -1}, "usage.cacheWriteInputTokens"),
    ({"inputTokens": 1, "outputTokens": -1}, "usage.outputTokens"),
]


@pytest.mark.parametrize(("block", "field"), ROWS, ids=[f"{field}-{n}" for n, (_b, field) in enumerate(ROWS)])
def test_a_bad_count_names_its_full_path(block: dict[str, Any], field: str) -> None:
    with pytest.raises(UsageError) as error:
        normalise_usage(block)
    assert (error.value.reason, error.value.detail) == ("invalid_count", f"{field} is negative: -1")


@pytest.mark.parametrize(
    ("block", "field"),
    [
        ({"prompt_tokens": 1, "prompt_tokens_details": 3}, "usage.prompt_tokens_details"),
        ({"input_tokens": 1, "input_tokens_details": [1]}, "usage.input_tokens_details"),
        ({"input_tokens": 1, "cache_creation": "5m"}, "usage.cache_creation"),
    ],
)
def test_a_nested_block_that_is_no_object_names_its_path(block: dict[str, Any], field: str) -> None:
    with pytest.raises(UsageError) as error:
        normalise_usage(block)
    assert (error.value.reason, error.value.detail) == ("invalid_usage", f"{field} is not an object")


def test_the_path_starts_where_the_caller_says() -> None:
    with pytest.raises(UsageError) as error:
        normalise_usage({"prompt_tokens": 2, "prompt_tokens_details": {"cached_tokens": -1}}, "spans[3].usage")
    assert error.value.detail == "spans[3].usage.prompt_tokens_details.cached_tokens is negative: -1"
