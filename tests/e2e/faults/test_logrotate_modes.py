"""Issue 13 fault suite: the real /usr/sbin/logrotate (rotate 5, every 2 s) in each mode.

- create: rename app.log to app.log.1 and create a new app.log; the writer reopens on SIGUSR1 from postrotate.
- copytruncate: copy app.log to app.log.1, then truncate app.log; the writer keeps writing (O_APPEND).
  Lines written between logrotate's copy and its truncate are in no file: that window is logrotate's own
  loss, measured apart (Result.window_missing) and allowed; everything else must be counted exactly once.
- compress + delaycompress: rename rotation, app.log.1 stays plain one period, then becomes app.log.2.gz.
- dateext: rename rotation to app.log-YYYYmmdd-HHMMSS (seconds in dateformat, so repeated rotations
  get distinct names); old names sort, rotate 5 deletes the oldest.

A writer appends >= 5k lines/s throughout; the sidecar follows `app.log*`. Oracle
(tests/support/faults.py): lost = written - counted, doubled = duplicates + over-count, both 0.
Short CI versions; scripts/fault_soak.py is the long run (docs/faults.md).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.faults import LOGROTATE, check_exact, run_scenario

MODES = ("create", "copytruncate", "compress", "dateext")
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.faults,
    pytest.mark.skipif(not os.path.exists(LOGROTATE), reason="logrotate is not installed (apt-get install logrotate)"),
]
RATE = 5000.0
# Checkpoint every 0.5 s, kills >= 1.5 s apart, SIGTERM outage of 1 s: the CI runs check restart
# correctness deterministically; the timing-dependent cases are measured by scripts/fault_soak.py.
CKPT = 0.5


@pytest.mark.parametrize("mode", MODES)
def test_graceful(tmp_path: Path, mode: str) -> None:
    check_exact(run_scenario(tmp_path, mode, "graceful", duration=12, rate=RATE, checkpoint_interval=CKPT, log=print))


@pytest.mark.parametrize("mode", MODES)
def test_kill9_restart_loop(tmp_path: Path, mode: str) -> None:
    check_exact(run_scenario(tmp_path, mode, "kill9", duration=20, restarts=10, min_gap=1.5, rate=RATE,
                             checkpoint_interval=CKPT, log=print))


@pytest.mark.parametrize("mode", MODES)
def test_sigterm_mid_run_then_restart(tmp_path: Path, mode: str) -> None:
    check_exact(run_scenario(tmp_path, mode, "sigterm", duration=12, rate=RATE, checkpoint_interval=CKPT, log=print))


@pytest.mark.parametrize("mode", MODES)
def test_sighup_mid_run(tmp_path: Path, mode: str) -> None:
    """SIGHUP reloads the price table; the process keeps running and counting."""
    check_exact(run_scenario(tmp_path, mode, "sighup", duration=12, rate=RATE, checkpoint_interval=CKPT, log=print))


@pytest.mark.parametrize("mode", MODES)
def test_kill9_outage_across_two_rotations(tmp_path: Path, mode: str) -> None:
    """Down for two rotation periods: every rotated file is still on disk (rotate 5), nothing may be lost."""
    check_exact(run_scenario(tmp_path, mode, "outage", duration=12, rate=RATE, checkpoint_interval=CKPT, log=print))
