"""Numbers for people: rounding, thousands separators, and never nan, inf, an exponent or float noise."""

from __future__ import annotations

import math
import re

from hypothesis import given
from hypothesis import strategies as st

from exporter.report import numbers

USD = re.compile(r"-?\$(\d{1,3}(,\d{3})*)\.(\d{2}|\d{4})")
TOKENS = re.compile(r"-?\d{1,3}(,\d{3})*")
PERCENT = re.compile(r"-?(\d{1,3}(,\d{3})*)\.\d%")
NOISE = re.compile(r"nan|inf|e[+-]?\d", re.IGNORECASE)
money = st.floats(min_value=-1e13, max_value=1e13, allow_nan=False, allow_infinity=False)


def _number(text: str) -> float:
    return float(text.replace("$", "").replace(",", "").replace("%", "").replace("<", ""))


@given(money)
def test_usd_rounds_to_cents_or_four_decimals_with_separators(value: float) -> None:
    text = numbers.usd(value)
    assert not NOISE.search(text)
    if text.endswith("<$0.0001"):
        assert 0 < abs(value) < 0.00005
        return
    match = USD.fullmatch(text)
    assert match, text
    decimals = len(match.group(3))
    assert abs(_number(text) - value) <= 0.5 * 10 ** -decimals + abs(value) * 1e-15
    assert decimals == (2 if abs(_number(text)) >= 1 or _number(text) == 0 else 4)
    assert text != "-$0.00"


def test_usd_examples() -> None:
    assert numbers.usd(42.827352999999995) == "$42.83"
    assert numbers.usd(1234567.891) == "$1,234,567.89"
    assert numbers.usd(0.0048000000000000004) == "$0.0048"
    assert numbers.usd(0.99996) == "$1.00"
    assert numbers.usd(-3.5) == "-$3.50"
    assert numbers.usd(0.0) == "$0.00"
    assert numbers.usd(1e-9) == "<$0.0001"
    assert numbers.usd(-1e-9) == "-<$0.0001"
    for missing in (None, math.nan, math.inf, -math.inf):
        assert numbers.usd(missing) == numbers.DASH


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_tokens_group_digits_by_three_and_keep_every_digit(value: int) -> None:
    text = numbers.tokens(value)
    assert TOKENS.fullmatch(text), text
    assert int(text.replace(",", "")) == value


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False))
def test_percent_rounds_to_one_decimal(fraction: float) -> None:
    text = numbers.percent(fraction)
    assert not NOISE.search(text)
    if "<" in text:
        assert 0 < abs(fraction) * 100 < 0.05
        return
    assert PERCENT.fullmatch(text), text
    assert abs(_number(text) - fraction * 100) <= 0.05 + abs(fraction) * 1e-12


def test_percent_examples() -> None:
    assert numbers.percent(0.184) == "18.4%"
    assert numbers.percent(0.0) == "0.0%"
    assert numbers.percent(0.0001) == "<0.1%"
    assert numbers.percent(1.0) == "100.0%"
    assert numbers.percent(None) == numbers.percent(math.nan) == numbers.DASH


@given(st.integers(min_value=0, max_value=10**14) | st.floats(min_value=0, max_value=1e14, allow_nan=False))
def test_compact_is_within_a_twentieth_of_its_unit(value: float) -> None:
    text = numbers.compact(value)
    assert not NOISE.search(text)
    match = re.fullmatch(r"([\d,]+(?:\.\d)?)([kMBT]?)", text)
    assert match, text
    unit = {"": 1, "k": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[match.group(2)]
    assert abs(float(match.group(1).replace(",", "")) * unit - value) <= 0.05 * unit + 0.5


def test_compact_and_ratio_examples() -> None:
    assert numbers.compact(950) == "950"
    assert numbers.compact(999_960) == "1.0M"
    assert numbers.compact(12_345) == "12.3k"
    assert numbers.compact(25_826_363) == "25.8M"
    assert numbers.compact_usd(12_345.6) == "$12.3k"
    assert numbers.compact_usd(12.3456) == "$12.35"
    assert numbers.ratio(1.8367) == "1.84×"
    assert numbers.ratio(None) == numbers.DASH
    assert numbers.share(1, 0) is None and numbers.share(1, 4) == 0.25
