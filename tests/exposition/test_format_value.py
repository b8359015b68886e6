"""``format_value``: a sample's value text, the finite case tested first for speed, must stay exact.

Every finite float parses back to itself (repr is the shortest round-trip text),
an int is its decimal digits (no ``.0``: counts stay integers in the text), and
the three non-finite values are written as the exposition formats spell them.
"""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from exporter.exposition.lines import format_value


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_finite_float_parses_back_to_itself(value: float) -> None:
    text = format_value(value)
    assert float(text) == value and math.copysign(1.0, float(text)) == math.copysign(1.0, value)
    assert text == repr(value)


@given(st.integers())
def test_an_int_is_its_digits(value: int) -> None:
    assert format_value(value) == str(value)
    assert int(format_value(value)) == value


def test_non_finite_values_are_spelled_as_the_formats_want() -> None:
    assert format_value(math.inf) == "+Inf"
    assert format_value(-math.inf) == "-Inf"
    assert format_value(math.nan) == "NaN"


def test_a_bool_is_written_as_a_float() -> None:
    """Not ``True``: a gauge set from a flag is 1.0, as it was before the int fast path."""
    assert format_value(True) == "1.0"
    assert format_value(False) == "0.0"
