"""Hostile operation (issue 13): SIGHUP (a terminal closing, `kill -HUP` for a reload) must not
kill the sidecar, and what it counted must stay counted."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.support.faults import SidecarProcess, now_rfc3339, poll, record_line, write_config

pytestmark = [pytest.mark.e2e, pytest.mark.faults]


def test_sighup_keeps_running_and_keeps_counts(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "gw.jsonl"
    sidecar = SidecarProcess(write_config(tmp_path / "s.yaml", tmp_path / "state", [str(logs / "*.jsonl")]),
                             tmp_path / "s.log").start()
    try:
        with open(log, "ab") as f:
            f.writelines(record_line(i, now_rfc3339()) for i in range(1000))
        poll(lambda: sidecar.snapshot().requests == 1000, 30, "1000 requests")
        sidecar.signal(signal.SIGHUP)
        with open(log, "ab") as f:
            f.writelines(record_line(i, now_rfc3339()) for i in range(1000, 2000))

        def consumed() -> object:
            if not sidecar.alive():
                return "dead"
            try:
                snap = sidecar.snapshot()
            except OSError:  # dying right now: the next check sees it
                return None
            return snap if snap.consumed >= 2000 else None

        snap = poll(consumed, 30, "2000 lines consumed (or the sidecar's death)")
        assert snap != "dead", f"SIGHUP killed the sidecar (exit {sidecar.proc.returncode if sidecar.proc else None})"
        assert not isinstance(snap, str)
        assert (snap.requests, snap.duplicates) == (2000, 0)
    finally:
        code = sidecar.terminate() if sidecar.alive() else None
    assert code == 0
