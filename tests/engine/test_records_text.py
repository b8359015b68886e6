"""exporter.engine.records: records that carry text instead of counts, counted with real tiktoken encodings.

The token numbers are pinned from the real o200k_base and cl100k_base rank files: the
Japanese prompt below is 10 tokens in o200k_base, 17 in cl100k_base and 5 by the chars/4
estimate, so dropping the text, counting it with the wrong tokenizer (model or provider
lost on the way to the counter) or losing the counter each give another number.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from exporter.engine.pipeline import Pipeline
from exporter.engine.records import Record, Rejection, parse_line, parse_object
from exporter.prices.table import load_price_table
from exporter.tokens.counter import TokenCounter

PRICES = Path(__file__).resolve().parents[1] / "fixtures" / "engine" / "prices_two_versions.yaml"

BEFORE = "こんにちは世界、圧縮されたプロンプト"  # o200k_base 10, cl100k_base 17, chars/4 5
AFTER = "世界"  # o200k_base 1, cl100k_base 3, chars/4 1
O200K, CL100K = "tiktoken:o200k_base", "tiktoken:cl100k_base"


@functools.cache
def counter() -> TokenCounter:
    """The default mapping, plus a provider ("legacy") whose unknown models count in cl100k_base."""
    return TokenCounter(provider_encodings={"legacy": "cl100k_base", "openai": "o200k_base"})


@functools.cache
def broken_counter(tmp: str) -> TokenCounter:
    """Every encoding's file missing: counts fall back to ceil(chars/4)."""
    missing = [Path(tmp) / "missing.tiktoken"]
    return TokenCounter(encoding_paths={"o200k_base": missing, "cl100k_base": missing})


def text_line(**fields: Any) -> bytes:
    return json.dumps({"ts": "2026-11-10T12:00:00Z", "request_id": "t1", **fields}).encode()


def counted(raw: bytes, text_counter: Any = None) -> Record:
    found = parse_line(raw, counter() if text_counter is None else text_counter)
    assert isinstance(found, Record), found
    return found


def test_the_pinned_numbers_are_the_encodings() -> None:
    # the premise of every test below: the two encodings disagree on this text
    assert counter().count_encoding(BEFORE, "o200k_base") == (10, O200K)
    assert counter().count_encoding(BEFORE, "cl100k_base") == (17, CL100K)
    assert counter().count_encoding(AFTER, "o200k_base") == (1, O200K)
    assert counter().count_encoding(AFTER, "cl100k_base") == (3, CL100K)


@pytest.mark.parametrize(
    ("model", "provider", "before", "after", "method"),
    [
        ("gpt-4o", None, 10, 1, O200K),
        ("gpt-4", None, 17, 3, CL100K),  # the model picks cl100k_base
        ("house-model", "legacy", 17, 3, CL100K),  # only the provider picks cl100k_base
        ("house-model", None, 10, 1, O200K),  # neither: the default encoding
    ],
)
def test_text_before_and_after_are_counted_in_the_models_encoding(
    model: str, provider: str | None, before: int, after: int, method: str
) -> None:
    found = counted(text_line(model=model, provider=provider, text_before=BEFORE, text_after=AFTER))
    assert (found.tokens_before, found.tokens_after, found.count_method) == (before, after, method)
    assert found.flags == ("text_counted",)


def test_messages_before_and_after_are_counted_per_segment() -> None:
    messages = [{"role": "user", "content": BEFORE},
                {"role": "assistant", "content": [{"type": "text", "text": AFTER}]}]
    found = counted(text_line(model="gpt-4", messages_before=messages, messages_after=[{"content": AFTER}]))
    assert (found.tokens_before, found.tokens_after, found.count_method) == (17 + 3, 3, CL100K)
    found = counted(text_line(model="house-model", provider="legacy", messages_before=messages,
                              messages_after=[AFTER]))
    assert (found.tokens_before, found.tokens_after, found.count_method) == (17 + 3, 3, CL100K)


def test_text_is_preferred_to_messages_on_the_same_side() -> None:
    found = counted(text_line(model="gpt-4o", text_before=BEFORE, messages_before=[AFTER], text_after=AFTER,
                              messages_after=[BEFORE]))
    assert (found.tokens_before, found.tokens_after) == (10, 1)


def test_text_falls_back_to_chars4_when_no_encoding_loads(tmp_path: Path) -> None:
    found = counted(text_line(model="gpt-4o", text_before=BEFORE, text_after=AFTER), broken_counter(str(tmp_path)))
    assert (found.tokens_before, found.tokens_after, found.count_method) == (5, 1, "estimate:chars/4")


class SplitCounter:
    """Text in a real encoding, messages by a real counter whose files are missing (chars/4)."""

    def __init__(self, exact: TokenCounter, fallback: TokenCounter) -> None:
        self.exact, self.fallback = exact, fallback

    def count_text(self, text: str, model: str | None = None, provider: str | None = None) -> tuple[int, str]:
        return self.exact.count_text(text, model, provider)

    def count_messages(self, messages: list[Any], model: str | None = None,
                       provider: str | None = None) -> tuple[int, str]:
        return self.fallback.count_messages(messages, model, provider)


def test_one_estimated_side_labels_both_as_estimated(tmp_path: Path) -> None:
    split = SplitCounter(counter(), broken_counter(str(tmp_path)))
    found = counted(text_line(model="gpt-4o", text_before=BEFORE, messages_after=[AFTER]), split)
    assert (found.tokens_before, found.tokens_after, found.count_method) == (10, 1, "estimate:chars/4")


def test_text_is_not_counted_without_a_counter_or_when_counts_are_given() -> None:
    raw = text_line(model="gpt-4o", text_before=BEFORE, text_after=AFTER)
    found = parse_line(raw, None)
    assert isinstance(found, Record)
    assert (found.tokens_before, found.tokens_after, found.flags) == (None, None, ())
    given = counted(text_line(model="gpt-4o", tokens_before=40, text_before=BEFORE, text_after=AFTER))
    assert (given.tokens_before, given.tokens_after) == (40, None)
    assert "text_counted" not in given.flags
    given = counted(text_line(model="gpt-4o", tokens_after=4, text_before=BEFORE, text_after=AFTER))
    assert (given.tokens_before, given.tokens_after) == (None, 4)


def test_one_side_of_text_counts_nothing() -> None:
    for fields in ({"text_before": BEFORE}, {"text_after": AFTER}, {"messages_before": [BEFORE]}):
        found = counted(text_line(model="gpt-4o", **fields))
        assert (found.tokens_before, found.tokens_after, found.count_method) == (None, None, None), fields
        assert found.flags == (), fields


@pytest.mark.parametrize(
    ("fields", "side"),
    [
        ({"text_before": 5, "text_after": AFTER}, "before"),
        ({"text_before": BEFORE, "text_after": {"text": AFTER}}, "after"),
        ({"messages_before": "not a list", "text_after": AFTER}, "before"),
        ({"text_before": BEFORE, "messages_after": 7}, "after"),
    ],
)
def test_text_of_the_wrong_type_is_rejected(fields: dict[str, Any], side: str) -> None:
    found = parse_object({"ts": 1_794_000_000, "model": "gpt-4o", **fields}, counter())
    assert isinstance(found, Rejection)
    assert (found.reason, found.detail) == ("invalid_field", f"text_{side}/messages_{side} has the wrong type")
    assert found.ts == 1_794_000_000


def test_a_pipeline_prices_the_counted_text() -> None:
    # gamma's plain family has the cl100k_base factor 0.9 in October: 17 - 3 = 14 tokens saved
    p = Pipeline(load_price_table(PRICES), counter=counter())
    p.ingest_line(json.dumps({"ts": "2026-10-10T12:00:00Z", "request_id": "g1", "model": "gamma",
                              "provider": "legacy", "text_before": BEFORE, "text_after": AFTER}).encode())
    p.ingest_line(json.dumps({"ts": "2026-10-10T12:00:01Z", "request_id": "a1", "model": "gpt-4",
                              "text_before": BEFORE, "text_after": AFTER}).encode())
    october = p.aggregates.month_totals()["2026-10"]
    assert october["tokens_saved"] == 14 + 14
    assert october["usd_saved"] == pytest.approx(14 * 0.9 * 0.5 / 1e6, rel=1e-12)  # gpt-4 is unpriced here
    flagged = {flag: n for (_month, flag), n in p.aggregates.flagged.items()}
    assert flagged.get("text_counted") == 2


def test_integer_labels_up_to_64_bits_are_their_decimal_text() -> None:
    for value, shown in ((2**64 - 1, "18446744073709551615"), (2**63, "9223372036854775808"), (7, "7")):
        found = parse_object({"ts": 1_794_000_000, "model": "m", "request_id": value, "tenant": value})
        assert isinstance(found, Record) and (found.request_id, found.tenant) == (shown, shown)
    found = parse_object({"ts": 1_794_000_000, "model": "m", "request_id": 2**64})
    assert isinstance(found, Rejection)
    assert (found.reason, found.detail) == ("invalid_field", "request_id has type int, expected a string")
