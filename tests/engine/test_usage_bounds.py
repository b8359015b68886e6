"""exporter.engine.usage: the count bounds on the reference path (the fast path has its own tests).

2**53-1 is the largest count a float sum keeps exact: it is accepted, one more is refused, by
``count_value`` itself, inside a usage block and through ``parse_line_reference``. The detail
names the field and the number's size, never a value of thousands of digits.
"""

from __future__ import annotations

import json

import pytest

from exporter.engine.records import Record, Rejection, parse_line_reference
from exporter.engine.usage import MAX_COUNT, UsageError, count_value, normalise_usage


def test_max_count_is_2_to_the_53_minus_1() -> None:
    assert MAX_COUNT == 9_007_199_254_740_991 == 2**53 - 1
    assert float(MAX_COUNT) == MAX_COUNT and float(MAX_COUNT + 2) != MAX_COUNT + 2


@pytest.mark.parametrize("value", [0, 1, MAX_COUNT - 1, MAX_COUNT])
def test_counts_up_to_the_bound_are_accepted(value: int) -> None:
    assert count_value(value, "n") == value
    usage = normalise_usage({"prompt_tokens": value, "completion_tokens": value})
    assert usage is not None and (usage.fresh_input, usage.output) == (value, value)
    found = parse_line_reference(json.dumps({"ts": 1_794_000_000, "model": "m", "tokens_before": value,
                                             "tokens_after": 0, "would_have_saved": value}).encode())
    assert isinstance(found, Record) and (found.tokens_before, found.would_have_saved) == (value, value)


@pytest.mark.parametrize(
    ("value", "detail"),
    [
        (MAX_COUNT + 1, "n is too large: 9007199254740992"),
        (2**64 - 1, "n is too large: 18446744073709551615"),  # 64 bits: still shown
        (2**64, "n is too large: a 65-bit integer"),
        (-1, "n is negative: -1"),
        (-(2**70), "n is negative: a 71-bit integer"),
        (True, "n is a boolean, expected an integer"),
        (5.0, "n is not an integer: 5.0"),
        ("7", "n has type str, expected an integer"),
        (None, "n has type NoneType, expected an integer"),
    ],
)
def test_counts_past_the_bound_are_refused_with_their_size(value: object, detail: str) -> None:
    with pytest.raises(UsageError) as error:
        count_value(value, "n")
    assert (error.value.reason, error.value.detail, str(error.value)) == ("invalid_count", detail, detail)


def test_the_bound_inside_a_usage_block_and_a_record() -> None:
    with pytest.raises(UsageError) as error:
        normalise_usage({"input_tokens": MAX_COUNT + 1})
    assert error.value.detail == "usage.input_tokens is too large: 9007199254740992"
    found = parse_line_reference(json.dumps({"ts": 1_794_000_000, "model": "m", "tokens_before": MAX_COUNT + 1,
                                             "tokens_after": 0}).encode())
    assert isinstance(found, Rejection)
    assert (found.reason, found.detail) == ("invalid_count", "tokens_before is too large: 9007199254740992")
    found = parse_line_reference(json.dumps({"ts": 1_794_000_000, "model": "m", "components": [
        {"name": "dedupe", "tokens_saved": MAX_COUNT + 1}]}).encode())
    assert isinstance(found, Rejection)
    assert (found.reason, found.detail) == ("invalid_components",
                                            "components[0].tokens_saved is too large: 9007199254740992")
