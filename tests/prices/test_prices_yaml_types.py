"""exporter.prices.table: what YAML makes of unquoted values, and zero multipliers.

YAML reads an unquoted ``2026-11-01`` as a date, ``2026-11-01 06:00:00`` as a timestamp without
an offset, ``2`` as an integer. Each must load as the table's author meant it: a version label
that is the text written, an ``effective_from`` at UTC midnight or that UTC time. A multiplier
of 0 is refused: accepted, ``or 1.0`` would silently price the tier at the input rate.
"""

from __future__ import annotations

import calendar

import pytest

from exporter.prices.table import PriceTableError, parse_price_table
from tests.support.timezones import chatham

__all__ = ["chatham"]  # the fixture, used by name

TABLE = """\
schema: llm-savings-prices/v1
versions:
  - version: {version}
    effective_from: {start}
    families:
      fam:
        cache_write_5m_multiplier: {m5}
        cache_write_1h_multiplier: {m1}
    models:
      m: {{family: fam, input: 2.0, output: 8.0}}
"""


def table_text(version: str = "v1", start: str = '"2026-11-01T00:00:00Z"', m5: str = "1.25", m1: str = "2.0") -> str:
    return TABLE.format(version=version, start=start, m5=m5, m1=m1)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> float:
    return float(calendar.timegm((year, month, day, hour, minute, 0, 0, 0, 0)))


@pytest.mark.parametrize(
    ("written", "label"),
    [
        ("2026-11-01", "2026-11-01"),  # a YAML date
        ("2", "2"),  # an integer
        ("1.5", "1.5"),  # a float
        ('"2026-11-01"', "2026-11-01"),
        ("v2026.11", "v2026.11"),
    ],
)
def test_unquoted_version_names_are_their_text(written: str, label: str) -> None:
    table = parse_price_table(table_text(version=written), "t.yaml")
    assert table.versions[0].version == label
    found = table.lookup("m", utc(2026, 11, 2))
    assert not isinstance(found, str) and found.version == label


@pytest.mark.parametrize("written", ["true", "null", "[a]", '""'])
def test_version_names_that_are_no_text_are_refused(written: str) -> None:
    with pytest.raises(PriceTableError) as error:
        parse_price_table(table_text(version=written), "t.yaml")
    assert "t.yaml:3" in str(error.value) and "versions[0].version" in str(error.value)
    assert "expected a non-empty string" in str(error.value)


@pytest.mark.usefixtures("chatham")  # a naive time read as local would move by 13:45 here
@pytest.mark.parametrize(
    ("start", "expected", "text"),
    [
        ("2026-11-01", utc(2026, 11, 1), "2026-11-01T00:00:00Z"),
        ("2026-11-01 06:30:00", utc(2026, 11, 1, 6, 30), "2026-11-01T06:30:00Z"),
        ("2026-11-01T06:30:00Z", utc(2026, 11, 1, 6, 30), "2026-11-01T06:30:00Z"),
        ("2026-11-01T06:30:00+05:30", utc(2026, 11, 1, 1, 0), "2026-11-01T06:30:00+05:30"),
        ('"2026-11-01T06:30:00"', utc(2026, 11, 1, 6, 30), "2026-11-01T06:30:00"),
        ('"2026-11-01"', utc(2026, 11, 1), "2026-11-01"),
    ],
)
def test_effective_from_in_every_yaml_form(start: str, expected: float, text: str) -> None:
    table = parse_price_table(table_text(start=start), "t.yaml")
    version = table.versions[0]
    assert (version.effective_from, version.effective_from_text) == (expected, text)
    assert table.version_at(expected) is version
    assert table.version_at(expected - 0.001) is None
    assert table.lookup("m", expected - 0.001) == "before_first_version"


@pytest.mark.parametrize("start", ["2026-13-01x", "12", "[2026]", "true"])
def test_effective_from_that_is_no_time_is_refused(start: str) -> None:
    with pytest.raises(PriceTableError) as error:
        parse_price_table(table_text(start=start), "t.yaml")
    assert "versions[0].effective_from" in str(error.value) and "expected an RFC 3339 timestamp" in str(error.value)


@pytest.mark.parametrize(("field", "m5", "m1"), [("cache_write_5m_multiplier", "0", "2.0"),
                                                 ("cache_write_1h_multiplier", "1.25", "0"),
                                                 ("cache_write_1h_multiplier", "1.25", "0.0")])
def test_a_zero_multiplier_is_refused(field: str, m5: str, m1: str) -> None:
    with pytest.raises(PriceTableError) as error:
        parse_price_table(table_text(m5=m5, m1=m1), "t.yaml")
    assert f"versions[0].families.fam.{field}" in str(error.value)
    assert "expected a positive finite number" in str(error.value)


def test_multipliers_price_both_write_tiers() -> None:
    rates = parse_price_table(table_text(m5="1.25", m1="2.5"), "t.yaml").lookup("m", utc(2026, 11, 2))
    assert not isinstance(rates, str)
    assert (rates.cache_write_5m, rates.cache_write_1h, rates.cache_read) == (2.5, 5.0, 2.0)


def test_version_at_picks_the_latest_start_not_after_ts() -> None:
    text = table_text() + """\
  - version: v2
    effective_from: 2026-12-01
    models:
      m: {input: 1.0, output: 4.0}
"""
    table = parse_price_table(text, "t.yaml")
    assert [v.version for v in table.versions] == ["v1", "v2"]
    assert table.version_at(utc(2026, 12, 1) - 1) is table.versions[0]
    assert table.version_at(utc(2026, 12, 1)) is table.versions[1]
    assert table.newest is table.versions[1]
