"""The demo's line for a pipe: short, rounded for people, the same figures as the summary."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from exporter.demo.demo import Summary, render_line, short_count

UNITS = {"": 1, "k": 1e3, "M": 1e6, "B": 1e9}


@given(st.integers(0, 10**13))
def test_short_count_is_close_and_never_spills_into_the_next_unit(n: int) -> None:
    text = short_count(n)
    match = re.fullmatch(r"(\d+(?:\.\d)?)([kMB]?)", text)
    assert match, text
    number, unit = float(match.group(1)), match.group(2)
    assert unit == "B" or number < 1000  # never "1000.0k"
    assert abs(number * UNITS[unit] - n) <= 0.05 * UNITS[unit] + 1e-6
    if n < 1000:
        assert text == str(n)


def test_boundaries() -> None:
    assert [short_count(n) for n in (0, 999, 1000, 1049, 999_949, 999_950, 12_345_678, 2_500_000_000)] == [
        "0", "999", "1.0k", "1.0k", "999.9k", "1.0M", "12.3M", "2.5B"]


NOON = datetime(2026, 12, 1, 12, 0, 5, tzinfo=UTC)


def test_the_line_reads_like_the_example() -> None:
    s = Summary("2026-12", requests=12_345, tokens_saved=1_234_567, usd_saved=42.83, spend=310.27,
                cache_read_savings=60.10, cache_write_premium=5.0)
    assert render_line(s, NOON) == ("12:00:05Z 2026-12 requests 12,345 · saved 1.2M tok ($42.83, 12.1% off the bill)"
                                    " · spend $310.27 · cache $55.10")


def test_shadow_rejects_and_unpriced_appear_only_when_there_are_some() -> None:
    s = Summary("2026-12", requests=3, tokens_saved=10, usd_saved=0.004, spend=0.5, would_tokens=2_500,
                unpriced=2, rejected={"invalid_json": 3, "future_ts": 1})
    line = render_line(s, NOON)
    assert line.endswith("· shadow 2.5k tok · 4 rejected, 2 unpriced")
    assert "($0.0040, 0.8% off the bill)" in line
    empty = render_line(Summary("2026-12"), NOON)
    assert empty == "12:00:05Z 2026-12 requests 0 · saved 0 tok ($0.0000) · spend $0.0000 · cache $0.0000"
