"""Hostile deployment (issue 13): two sidecars on one state_dir.

Two processes committing checkpoints to one directory overwrite each other's offsets and
aggregates; after a restart lines are lost or counted twice. The second must refuse to start
(non-zero exit) and name the process that holds the directory.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.support.faults import SidecarProcess, poll, write_config

pytestmark = [pytest.mark.e2e, pytest.mark.faults]


def test_second_sidecar_on_one_state_dir_refuses_naming_the_holder(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "gw.jsonl").write_bytes(b"")
    state = tmp_path / "state"
    first = SidecarProcess(write_config(tmp_path / "a.yaml", state, [str(logs / "*.jsonl")]),
                           tmp_path / "a.log").start()
    second = SidecarProcess(write_config(tmp_path / "b.yaml", state, [str(logs / "*.jsonl")]),
                            tmp_path / "b.log")
    try:
        second.start(wait_ready=False)
        poll(lambda: not second.alive(), 15, "the second sidecar to refuse and exit")
        assert second.wait_exit() != 0
        text = second.log_text()
        assert str(first.pid) in text, f"the refusal does not name the holder (pid {first.pid}): {text}"
        assert first.alive()
    finally:
        if second.alive():
            second.signal(signal.SIGKILL)
            second.wait_exit()
        first.terminate()
