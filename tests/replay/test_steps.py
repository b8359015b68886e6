"""The pure parts of backfill: step parsing, constant labels, the step clock."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.engine.pipeline import MonthOf
from exporter.replay.backfill import default_until, reserved_labels
from exporter.replay.steps import StepClock, StepError, parse_labels, parse_step, timestamp_text


@pytest.mark.parametrize(("text", "seconds"), [
    ("1h", 3600.0), ("15m", 900.0), ("90s", 90.0), ("1d", 86400.0), ("300", 300.0), ("1.5h", 5400.0),
])
def test_parse_step(text: str, seconds: float) -> None:
    assert parse_step(text) == seconds


@pytest.mark.parametrize(("text", "message"), [
    ("", "not a duration"), ("1w", "not a duration"), ("-1h", "not a duration"), ("h", "not a duration"),
    ("0s", "shorter than 1s"), ("0.5", "shorter than 1s"),
])
def test_parse_step_refuses(text: str, message: str) -> None:
    with pytest.raises(StepError, match=message):
        parse_step(text)


@given(amount=st.integers(1, 10_000), unit=st.sampled_from(["", "s", "m", "h", "d"]))
def test_parse_step_scales_by_its_unit(amount: int, unit: str) -> None:
    assert parse_step(f"{amount}{unit}") == amount * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[unit]


def test_labels_start_with_the_backfill_mark() -> None:
    assert parse_labels(["job=llm-savings-exporter", "cluster=eu-1"], reserved_labels()) == (
        ("backfill", "true"), ("job", "llm-savings-exporter"), ("cluster", "eu-1"))
    assert parse_labels([], reserved_labels()) == (("backfill", "true"),)


@pytest.mark.parametrize(("pair", "message"), [
    ("job", "not NAME=VALUE"), ("1job=x", "not NAME=VALUE"), ("__name__=x", "not NAME=VALUE"),
    ("month=2026-01", "already a label"), ("backfill=false", "already a label"), ("tenant=a", "already a label"),
])
def test_labels_refused(pair: str, message: str) -> None:
    with pytest.raises(StepError, match=message):
        parse_labels([pair], reserved_labels())


def test_repeated_label_refused() -> None:
    with pytest.raises(StepError, match="already a label"):
        parse_labels(["job=a", "job=b"], reserved_labels())


ZONES = ["UTC", "Europe/Berlin", "Asia/Kolkata", "America/St_Johns", "Australia/Lord_Howe"]


@given(ts=st.floats(min_value=1.6e9, max_value=2.0e9), step=st.sampled_from([60.0, 900.0, 3600.0, 5400.0, 86400.0]),
       zone=st.sampled_from(ZONES))
def test_next_step_is_the_grid_or_a_month_start_whichever_first(ts: float, step: float, zone: str) -> None:
    month_of = MonthOf(zone)
    clock = StepClock(step, month_of, month_of.start)
    following = clock.next_after(ts)
    assert ts < following <= ts + step
    on_grid = following % step == 0
    month_start = month_of(following) != month_of(following - 1.0)
    assert on_grid or month_start
    # nothing in between: no grid point and no month start in (ts, following)
    just_before = max(ts, following - 1e-3)
    assert just_before // step == ts // step or just_before == ts
    assert month_of(just_before) == month_of(ts)


def test_month_starts_in_a_zone_are_steps() -> None:
    """Asia/Kolkata is UTC+05:30: its month starts fall between hourly grid points, and are steps."""
    month_of = MonthOf("Asia/Kolkata")
    clock = StepClock(3600.0, month_of, month_of.start)
    start = datetime(2026, 11, 1, tzinfo=ZoneInfo("Asia/Kolkata")).timestamp()
    assert start % 3600 == 1800
    assert clock.next_after(start - 600) == start
    assert clock.next_after(start) == start + 1800  # then back on the grid


def test_default_until_is_the_next_month_start_unless_that_is_ahead_of_now() -> None:
    month_of = MonthOf("UTC")
    clock = StepClock(3600.0, month_of, month_of.start)
    newest = datetime(2026, 10, 20, 13, 30, tzinfo=UTC).timestamp()
    november = datetime(2026, 11, 1, tzinfo=UTC).timestamp()
    assert default_until(newest, clock, now=november + 86400) == november
    now = datetime(2026, 10, 25, 8, 17, tzinfo=UTC).timestamp()
    assert default_until(newest, clock, now=now) == datetime(2026, 10, 25, 8, tzinfo=UTC).timestamp()
    assert default_until(newest, clock, now=newest + 60) == newest + 1800  # the step after the newest record


def test_timestamp_text() -> None:
    assert timestamp_text(1793491200.0) == "1793491200"
    assert timestamp_text(1793491200.25) == "1793491200.25"
