"""Hostile input (issue 13): a record dated in the future must not make the dedupe ledger forget.

The ledger's window moves with the newest record time it has seen (exporter/dedupe.py), so one
record dated far ahead - year 9999, or just past the 40-day window - expires every id of today.
A redelivered id that arrives after it must still be a duplicate, not a second request.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.faults import SidecarProcess, poll, record_line, write_config

pytestmark = [pytest.mark.e2e, pytest.mark.faults]
N = 100


def _run(tmp_path: Path, future_ts: str) -> tuple[float, float]:
    logs = tmp_path / "logs"
    logs.mkdir()
    config = write_config(tmp_path / "sidecar.yaml", tmp_path / "state", [str(logs / "*.jsonl")])
    sidecar = SidecarProcess(config, tmp_path / "sidecar.log").start()
    try:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        log = logs / "gw.jsonl"
        with open(log, "ab") as f:
            f.writelines(record_line(i, now, "h-") for i in range(N))
        poll(lambda: sidecar.snapshot().requests == N, 30, f"{N} requests counted")
        with open(log, "ab") as f:
            f.write(record_line(0, future_ts, "future-"))
        poll(lambda: sidecar.snapshot().consumed == N + 1, 30, "the future record consumed")
        with open(log, "ab") as f:  # the gateway redelivers today's ids
            f.writelines(record_line(i, now, "h-") for i in range(N))
        snap = poll(lambda: (s := sidecar.snapshot()).consumed == 2 * N + 1 and s, 30, "the redelivery consumed")
        return snap.requests, snap.duplicates
    finally:
        assert sidecar.terminate() == 0, sidecar.log_text()


def test_year_9999_record_does_not_expire_todays_ids(tmp_path: Path) -> None:
    requests, duplicates = _run(tmp_path, "9999-12-01T00:00:00Z")
    assert duplicates == N, f"redelivered ids counted as new: requests={requests} duplicates={duplicates}"
    assert requests <= N + 1


def test_record_42_days_ahead_does_not_expire_todays_ids(tmp_path: Path) -> None:
    ahead = (datetime.now(UTC) + timedelta(days=42)).strftime("%Y-%m-%dT%H:%M:%SZ")
    requests, duplicates = _run(tmp_path, ahead)
    assert duplicates == N, f"redelivered ids counted as new: requests={requests} duplicates={duplicates}"
    assert requests <= N + 1

