"""exporter.engine.records on the reference path (``parse_object``): fields a source sets, flags, ts bounds.

Source mappings (LiteLLM, OTLP dialects) hand ``parse_object`` decoded objects with
``source_flags`` and ``source_dialect``; gateways' JSON lines mostly take the fast path. These
tests hold the reference path to the same contract, field by field, bound by bound.
"""

from __future__ import annotations

from typing import Any

import pytest

from exporter.engine.records import (
    EPOCH_MS_THRESHOLD,
    MAX_EPOCH_SECONDS,
    SOURCE_FLAGS,
    Record,
    Rejection,
    parse_object,
    parse_ts,
)

TS = 1_794_000_000
NOV_1 = 1_793_491_200.0
# fromisoformat takes any number of fraction digits: these differ only in length, 64 and 65
LONGEST_TS = "2026-11-01T00:00:00." + "0" * 38 + "+00:00"
TOO_LONG_TS = "2026-11-01T00:00:00." + "0" * 39 + "+00:00"


def parsed(**fields: Any) -> Record:
    found = parse_object({"ts": TS, "model": "m", "request_id": "r", **fields})
    assert isinstance(found, Record), found
    return found


def test_every_field_reaches_the_record() -> None:
    found = parsed(provider="openai", tenant="team-a", count_method="tiktoken:o200k_base", tokens_before=900,
                   tokens_after=300, would_have_saved=50, components=[{"name": "dedupe", "tokens_saved": 600}],
                   usage={"prompt_tokens": 300, "completion_tokens": 20}, source_dialect="openllmetry",
                   source_flags=["usage_no_cache_ttl", "response_cache_hit"])
    assert (found.ts, found.request_id, found.model, found.provider, found.tenant) == (TS, "r", "m", "openai", "team-a")
    assert (found.tokens_before, found.tokens_after, found.would_have_saved) == (900, 300, 50)
    assert (found.count_method, found.components) == ("tiktoken:o200k_base", (("dedupe", 600),))
    assert found.usage is not None and (found.usage.fresh_input, found.usage.output) == (300, 20)
    assert (found.source_dialect, found.flags) == ("openllmetry", ("usage_no_cache_ttl", "response_cache_hit"))


def test_source_flags_keep_known_strings_only_in_order() -> None:
    found = parsed(source_flags=["response_cache_hit", "made_up", 7, None, "no_id", "usage_no_cache_detail"])
    assert found.flags == ("response_cache_hit", "usage_no_cache_detail")  # no_id is the engine's, not a source's
    assert parsed(source_flags="response_cache_hit").flags == ()  # not a list: ignored
    assert set(SOURCE_FLAGS) >= {"response_cache_hit", "usage_no_cache_detail"}


def test_source_dialect_must_be_a_string() -> None:
    assert parsed(source_dialect="litellm").source_dialect == "litellm"
    assert parsed(source_dialect=5).source_dialect is None
    assert parsed().source_dialect is None


@pytest.mark.parametrize(
    ("fields", "flags"),
    [
        ({"components": [{"name": "dedupe", "tokens_saved": 5}]}, ("incomplete_savings",)),
        ({"tokens_before": 5}, ("incomplete_savings",)),
        ({"tokens_after": 5}, ("incomplete_savings",)),
        ({"tokens_before": 5, "tokens_after": 1}, ()),
        ({"tokens_before": 5, "tokens_after": 1, "components": [{"name": "a", "tokens_saved": 4}]}, ()),
        ({}, ()),
        ({"request_id": None}, ("no_id",)),
        ({"request_id": ""}, ("no_id",)),
        ({"usage": {"weird": 1}}, ("unknown_usage_shape",)),
    ],
)
def test_flags_of_incomplete_records(fields: dict[str, Any], flags: tuple[str, ...]) -> None:
    assert parsed(**fields).flags == flags


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (0, 0.0),
        (0.5, 0.5),
        (EPOCH_MS_THRESHOLD, EPOCH_MS_THRESHOLD),  # exactly the threshold: still seconds
        (EPOCH_MS_THRESHOLD + 1000, (EPOCH_MS_THRESHOLD + 1000) / 1000),
        (MAX_EPOCH_SECONDS * 1000, MAX_EPOCH_SECONDS),  # in milliseconds, the last accepted
        ("1970-01-01T00:00:00Z", 0.0),
        ("9999-12-30T00:00:00Z", MAX_EPOCH_SECONDS),
        (" 2026-11-01T00:00:00Z ", NOV_1),
        (LONGEST_TS, NOV_1),
        (" " * 10 + LONGEST_TS, NOV_1),  # the length is counted after stripping
    ],
)
def test_timestamps_at_their_bounds_are_accepted(value: Any, seconds: float) -> None:
    assert len(LONGEST_TS) == 64 and len(TOO_LONG_TS) == 65
    assert parse_ts(value) == seconds
    assert parsed(ts=value).ts == seconds


@pytest.mark.parametrize(
    "value",
    [-1, -0.5, MAX_EPOCH_SECONDS * 1000 + 1000, "9999-12-30T00:00:01Z", "1969-12-31T23:59:59Z", TOO_LONG_TS],
)
def test_timestamps_past_their_bounds_are_refused(value: Any) -> None:
    found = parse_object({"ts": value, "model": "m"})
    assert isinstance(found, Rejection) and found.reason == "invalid_ts", found
