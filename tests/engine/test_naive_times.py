"""Naive timestamps are UTC, whatever the machine's time zone.

A record's ``ts`` without an offset must mean the same instant on every machine (a price
table's ``effective_from``: tests/prices/test_prices_yaml_types.py). Code that read it as local
time passes on a UTC machine, CI's clock, and fails only under another ``TZ``: each test here
switches the process to Pacific/Chatham (UTC+13:45 in November, +12:45 in July) first, so a
local reading gives another instant on any machine. scripts/test.sh also runs the fast loop
under that zone.
"""

from __future__ import annotations

import calendar
import json

import pytest

from exporter.engine.pipeline import Pipeline
from exporter.engine.records import Record, parse_line, parse_line_reference, parse_ts
from exporter.prices.table import parse_price_table
from tests.support.timezones import chatham

__all__ = ["chatham"]  # the fixture, used by name


def utc(year: int, month: int, day: int, hour: int, minute: int, second: int) -> float:
    """Epoch seconds of a UTC calendar time, computed without any time-zone library."""
    return float(calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)))


@pytest.mark.usefixtures("chatham")
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-01T00:00:00", utc(2026, 11, 1, 0, 0, 0)),
        ("2026-11-01 00:30:00", utc(2026, 11, 1, 0, 30, 0)),
        ("2026-07-15T12:00:00.250", utc(2026, 7, 15, 12, 0, 0) + 0.25),  # Chatham's winter offset
        ("2026-11-01", utc(2026, 11, 1, 0, 0, 0)),
    ],
)
def test_a_naive_record_ts_is_utc_under_another_zone(text: str, expected: float) -> None:
    assert parse_ts(text) == expected
    for parse in (parse_line, parse_line_reference):
        found = parse(json.dumps({"ts": text, "model": "m", "request_id": "r"}).encode())
        assert isinstance(found, Record) and found.ts == expected, (parse.__name__, found)


@pytest.mark.usefixtures("chatham")
def test_an_offset_still_wins_under_another_zone() -> None:
    assert parse_ts("2026-11-01T00:00:00+13:45") == utc(2026, 10, 31, 10, 15, 0)
    assert parse_ts("2026-11-01T00:00:00Z") == utc(2026, 11, 1, 0, 0, 0)


@pytest.mark.usefixtures("chatham")
def test_a_naive_record_near_midnight_lands_in_its_utc_month() -> None:
    # read as Chatham time, 2026-11-01T05:00 would be 2026-10-31T15:15Z: October's month and prices
    p = Pipeline(parse_price_table(TABLE.format(start='"2026-11-01T00:00:00"'), "t.yaml"))
    p.ingest_line(json.dumps({"ts": "2026-11-01T05:00:00", "model": "m", "request_id": "r",
                              "usage": {"prompt_tokens": 1000, "completion_tokens": 0}}).encode())
    totals = p.aggregates.month_totals()
    assert list(totals) == ["2026-11"]
    assert totals["2026-11"]["spend_usd"] == pytest.approx(1000 * 2.0 / 1e6, rel=1e-12)


TABLE = """\
schema: llm-savings-prices/v1
versions:
  - version: v1
    effective_from: {start}
    models:
      m: {{input: 2.0, output: 8.0}}
"""
