"""Hostile environment (issue 13): more matching files than file descriptors.

200 files match the glob, the sidecar runs with RLIMIT_NOFILE 64. Every line of every file must
still be counted once (the tailer cannot hold all files open at once: it has to close idle files
or queue them), no line may be read twice, and the sidecar must keep serving."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from tests.support.faults import SidecarProcess, now_rfc3339, poll, quiesce, record_line, write_config

pytestmark = [pytest.mark.e2e, pytest.mark.faults]
FILES, LINES, NOFILE = 200, 10, 64


def _limit_fds() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))


def test_more_files_than_fds_all_counted(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    ts = now_rfc3339()
    for n in range(FILES):
        (logs / f"gw-{n:03d}.jsonl").write_bytes(b"".join(record_line(n * LINES + i, ts) for i in range(LINES)))
    sidecar = SidecarProcess(write_config(tmp_path / "s.yaml", tmp_path / "state", [str(logs / "*.jsonl")]),
                             tmp_path / "s.log", preexec_fn=_limit_fds).start()
    try:
        last: list[object] = []

        def all_counted() -> bool:
            snap = sidecar.snapshot()
            last[:] = [snap]
            return snap.requests == FILES * LINES

        try:
            poll(all_counted, 30, f"{FILES * LINES} requests counted")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; last scrape {last}") from None
        snap = quiesce(sidecar, timeout=30)
        assert sidecar.alive()
        assert (snap.requests, snap.duplicates) == (FILES * LINES, 0), snap
    finally:
        code = sidecar.terminate()
    assert code == 0, sidecar.log_text()
