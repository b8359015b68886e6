"""Naive timestamps are UTC, whatever the machine's time zone.

A timestamp without an offset (a record's ``ts``, a price table's ``effective_from``) must
mean the same instant on every machine. Code that read it as local time passes on a UTC
machine, CI's clock, and fails only under another ``TZ``: each test here switches the
process to Pacific/Chatham (UTC+13:45 in November, +12:45 in winter) first, so a local
reading gives another instant here too. scripts/test.sh also runs the fast loop under it.
"""

from __future__ import annotations

import calendar
import json
import time
from collections.abc import Iterator

import pytest

from exporter.engine.pipeline import Pipeline
from exporter.engine.records import Record, parse_line, parse_line_reference, parse_ts
from exporter.prices.table import parse_price_table

CHATHAM = "Pacific/Chatham"


@pytest.fixture
def chatham(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process in Pacific/Chatham for the test, back to its own zone after."""
    monkeypatch.setenv("TZ", CHATHAM)
    time.tzset()
    assert time.localtime(0).tm_gmtoff == 12 * 3600 + 45 * 60  # the zone took effect
    yield
    monkeypatch.undo()
    time.tzset()


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


@pytest.mark.usefixtures("chatham")
@pytest.mark.parametrize(
    ("start", "expected", "text"),
    [
        ("2026-11-01", utc(2026, 11, 1, 0, 0, 0), "2026-11-01T00:00:00Z"),  # a YAML date
        ("2026-11-01 06:00:00", utc(2026, 11, 1, 6, 0, 0), "2026-11-01T06:00:00Z"),  # a naive YAML timestamp
        ("2026-11-01T06:00:00+05:30", utc(2026, 11, 1, 0, 30, 0), "2026-11-01T06:00:00+05:30"),
        ('"2026-11-01T06:00:00"', utc(2026, 11, 1, 6, 0, 0), "2026-11-01T06:00:00"),  # a naive string
        ('"2026-11-01T06:00:00-03:00"', utc(2026, 11, 1, 9, 0, 0), "2026-11-01T06:00:00-03:00"),
    ],
)
def test_effective_from_without_an_offset_is_utc(start: str, expected: float, text: str) -> None:
    table = parse_price_table(TABLE.format(start=start), "t.yaml")
    (version,) = table.versions
    assert (version.effective_from, version.effective_from_text) == (expected, text)
    assert table.lookup("m", expected - 0.001) == "before_first_version"
    assert table.lookup("m", expected) != "before_first_version"

