"""Month boundaries through the real Sidecar: the record's own month, in the configured zone.

Records straddling Oct 31 / Nov 1 land in their own month in UTC and in
Europe/Berlin (where the same instants split differently); OpenMetrics
``_created`` is each month's start in that zone; a backlog of last month read
after a restart lands in last month's series, which never decreases; records
older than ``month_retention`` are refused as ``expired_month`` (the wall clock
is injected, nothing sleeps).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from exporter.sidecar.sidecar import Sidecar
from tests.support.processes import OPENMETRICS_ACCEPT, Samples, replay_json, samples
from tests.support.sidecar import drain, make_config, record_line

OCT_START_UTC = 1_790_812_800  # 2026-10-01T00:00:00Z
NOV_START_UTC = 1_793_491_200  # 2026-11-01T00:00:00Z
OCT_START_BERLIN = 1_790_805_600  # 2026-09-30T22:00:00Z (CEST)
NOV_START_BERLIN = 1_793_487_600  # 2026-10-31T23:00:00Z (CET)

# (ts as written, UTC month, Berlin month)
STRADDLE = [
    ("2026-10-31T23:59:00Z", "2026-10", "2026-11"),
    ("2026-11-01T00:00:00Z", "2026-11", "2026-11"),
    ("2026-10-31T23:59:00+01:00", "2026-10", "2026-10"),
    ("2026-11-01T00:00:00+01:00", "2026-10", "2026-11"),
    ("2026-10-31T22:59:59Z", "2026-10", "2026-10"),
    ("2026-10-31T23:00:00Z", "2026-10", "2026-11"),
]


def _ts(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> float:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC).timestamp()


def _write(tmp: Path, lines: list[bytes], name: str = "a.jsonl") -> Path:
    (tmp / "logs").mkdir(exist_ok=True)
    path = tmp / "logs" / name
    with open(path, "ab") as f:
        f.writelines(lines)
    return path


def _close(sidecar: Sidecar) -> None:
    for runner in sidecar.sources:
        runner.tailer.close()
    sidecar.server.stop()


def _scrape(sidecar: Sidecar, openmetrics: bool = False) -> dict[str, Samples]:
    body, _ = sidecar.metrics(OPENMETRICS_ACCEPT if openmetrics else None)
    return samples(body.decode(), openmetrics=openmetrics)


def _per_month(parsed: dict[str, Samples], name: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in parsed.get(name, {}).items():
        month = dict(key)["month"]
        out[month] = out.get(month, 0.0) + value
    return out


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin"])
def test_straddling_records_land_in_their_own_month(tmp_path: Path, zone: str) -> None:
    lines = [record_line(i, ts=ts) for i, (ts, _, _) in enumerate(STRADDLE)]  # type: ignore[arg-type]
    path = _write(tmp_path, lines)
    wall = _ts(2026, 11, 1, 12)
    sidecar = Sidecar(make_config(tmp_path, timezone=zone), wall_clock=lambda: wall)
    try:
        drain(sidecar)
        text = _scrape(sidecar)
        om = _scrape(sidecar, openmetrics=True)
        summary = sidecar.summary()
    finally:
        _close(sidecar)
    column = 1 if zone == "UTC" else 2
    expected: dict[str, float] = {}
    for row in STRADDLE:
        expected[row[column]] = expected.get(row[column], 0) + 1
    # an independent check of the table itself, with zoneinfo
    for ts, *months in STRADDLE:
        local = datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(ZoneInfo(zone))
        assert local.strftime("%Y-%m") == months[column - 1]
    assert _per_month(text, "llm_savings_requests_total") == expected
    assert summary["month"] == "2026-11" and summary["requests"] == expected["2026-11"]
    starts = {"UTC": {"2026-10": OCT_START_UTC, "2026-11": NOV_START_UTC},
              "Europe/Berlin": {"2026-10": OCT_START_BERLIN, "2026-11": NOV_START_BERLIN}}[zone]
    created = om["llm_savings_requests_created"]
    assert created and all(value == starts[dict(key)["month"]] for key, value in created.items())
    assert {dict(k)["month"] for k in created} == set(expected)
    # every month counter carries the same _created for its month
    for name, table in om.items():
        if name.endswith("_created"):
            for key, value in table.items():
                assert value == starts[dict(key)["month"]], (name, key)
    months = replay_json([path], "--timezone", zone)["months"]
    assert {m: t["requests"] for m, t in months.items()} == expected


def _all_counter_values(parsed: dict[str, Samples]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(name, key): value for name, table in parsed.items() if name.endswith("_total")
            and name.startswith("llm_savings_") and "source_" not in name and "checkpoint" not in name
            for key, value in table.items()}


def test_backlog_of_last_month_after_restart_lands_there_and_never_decreases(tmp_path: Path) -> None:
    wall = _ts(2026, 11, 2, 9)
    first = [record_line(i, ts=_ts(2026, 10, 20) + i) for i in range(50)]
    first += [record_line(i, ts=_ts(2026, 11, 1, 3) + i) for i in range(50, 80)]
    _write(tmp_path, first)
    sidecar = Sidecar(make_config(tmp_path), wall_clock=lambda: wall)
    drain(sidecar)
    before = _scrape(sidecar)
    assert sidecar.checkpoint()
    _close(sidecar)
    assert _per_month(before, "llm_savings_requests_total") == {"2026-10": 50, "2026-11": 30}

    # while it was down: a gateway flushed a buffered backlog of October, then November went on
    late = [record_line(i, ts=_ts(2026, 10, 31, 23, 59) - i) for i in range(80, 120)]
    late += [record_line(i, ts=_ts(2026, 11, 2, 8) + i) for i in range(120, 130)]
    late += [record_line(3, ts=_ts(2026, 10, 20) + 3)]  # a retry of an October request
    _write(tmp_path, late)
    restarted = Sidecar(make_config(tmp_path), wall_clock=lambda: wall)
    try:
        previous = _all_counter_values(_scrape(restarted))
        assert previous == _all_counter_values(before)  # restored exactly, never lower
        steps = 0
        while restarted.ingest_once(max_lines=7):
            steps += 1
            now = _all_counter_values(_scrape(restarted))
            for series, value in previous.items():
                assert now.get(series, 0.0) >= value, f"{series} went down: {value} -> {now.get(series)}"
            previous = now
        final = _scrape(restarted)
    finally:
        _close(restarted)
    assert steps >= 5
    assert _per_month(final, "llm_savings_requests_total") == {"2026-10": 90, "2026-11": 40}
    assert _per_month(final, "llm_savings_duplicates_total") == {"2026-10": 1}


def test_record_older_than_retention_is_rejected_expired_month(tmp_path: Path) -> None:
    wall = _ts(2027, 3, 15)  # month_retention 3: 2026-12 .. 2027-03 are kept
    lines = [
        record_line(1, ts=_ts(2026, 11, 30, 23, 59, 59)),
        record_line(2, ts=_ts(2026, 12, 1)),
        record_line(3, ts=_ts(2027, 3, 14)),
        record_line(4, ts=_ts(2025, 1, 1)),
    ]
    _write(tmp_path, lines)
    sidecar = Sidecar(make_config(tmp_path, month_retention=3), wall_clock=lambda: wall)
    try:
        drain(sidecar)
        parsed = _scrape(sidecar)
    finally:
        _close(sidecar)
    assert _per_month(parsed, "llm_savings_requests_total") == {"2026-12": 1, "2027-03": 1}
    rejected = parsed["llm_savings_records_rejected_total"]
    assert {dict(k)["reason"] for k in rejected} == {"expired_month"}
    assert sum(rejected.values()) == 2


def test_expired_month_rejections_survive_the_next_checkpoint(tmp_path: Path) -> None:
    wall = _ts(2027, 3, 15)
    _write(tmp_path, [record_line(1, ts=_ts(2026, 11, 5)), record_line(2, ts=_ts(2027, 3, 1))])
    sidecar = Sidecar(make_config(tmp_path, month_retention=3), wall_clock=lambda: wall)
    try:
        drain(sidecar)
        assert sidecar.checkpoint()
        parsed = _scrape(sidecar)
    finally:
        _close(sidecar)
    rejected = parsed.get("llm_savings_records_rejected_total", {})
    assert sum(v for k, v in rejected.items() if dict(k)["reason"] == "expired_month") == 1


def test_months_beyond_retention_leave_metrics_as_the_clock_advances(tmp_path: Path) -> None:
    clock = [_ts(2026, 12, 15)]  # after every record: none is dated ahead of the clock
    lines = [record_line(i, ts=_ts(2026, 11, 10) + i) for i in range(5)]
    lines += [record_line(i, ts=_ts(2026, 12, 10) + i) for i in range(5, 8)]
    _write(tmp_path, lines)
    sidecar = Sidecar(make_config(tmp_path, month_retention=2), wall_clock=lambda: clock[0])
    drain(sidecar)
    assert _per_month(_scrape(sidecar), "llm_savings_requests_total") == {"2026-11": 5, "2026-12": 3}
    clock[0] = _ts(2027, 1, 31, 23)  # Nov is still one of the two months kept besides January
    sidecar.checkpoint()
    assert _per_month(_scrape(sidecar), "llm_savings_requests_total") == {"2026-11": 5, "2026-12": 3}
    clock[0] = _ts(2027, 2, 1, 0, 0, 1)  # now November is out
    sidecar.checkpoint()
    assert _per_month(_scrape(sidecar), "llm_savings_requests_total") == {"2026-12": 3}
    _close(sidecar)
    restarted = Sidecar(make_config(tmp_path, month_retention=2), wall_clock=lambda: clock[0])
    try:
        assert _per_month(_scrape(restarted), "llm_savings_requests_total") == {"2026-12": 3}
        _write(tmp_path, [record_line(99, ts=_ts(2026, 11, 11))])  # late November: refused
        drain(restarted)
        parsed = _scrape(restarted)
    finally:
        _close(restarted)
    assert _per_month(parsed, "llm_savings_requests_total") == {"2026-12": 3}
    assert sum(parsed["llm_savings_records_rejected_total"].values()) == 1

