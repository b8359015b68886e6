"""Issue 13 fault suite, logrotate mode compress (the real /usr/sbin/logrotate, rotate 5, every 2 s).

compress + delaycompress: rename rotation, app.log.1 stays plain one period, then becomes app.log.2.gz.
Compressed files are never followed (skipped by their magic bytes); only the rest of a checkpointed
file compressed while the sidecar was down is read from its .gz at restore.

A writer appends >= 5k lines/s throughout; the sidecar follows `app.log*`. Oracle
(tests/support/faults.py): lost = written - counted, doubled = duplicates + over-count, both 0.
Short CI versions; scripts/fault_soak.py is the long run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.faults import LOGROTATE, check_exact, run_scenario

MODE = "compress"
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.faults,
    pytest.mark.skipif(not os.path.exists(LOGROTATE), reason="logrotate is not installed (apt-get install logrotate)"),
]
RATE = 5000.0
# Checkpoint every 0.5 s, kills >= 1.5 s apart, SIGTERM outage of 1 s: the CI runs check restart
# correctness deterministically. The timing-dependent loss of compress+delaycompress (a file
# compressed before a restarted sidecar commits its progress) is pinned by the outage test of
# test_logrotate_compress.py and measured by scripts/fault_soak.py (docs/faults.md).
CKPT = 0.5


def test_graceful(tmp_path: Path) -> None:
    check_exact(run_scenario(tmp_path, MODE, "graceful", duration=12, rate=RATE, checkpoint_interval=CKPT, log=print))


def test_kill9_restart_loop(tmp_path: Path) -> None:
    check_exact(run_scenario(tmp_path, MODE, "kill9", duration=20, restarts=10, min_gap=1.5, rate=RATE,
                             checkpoint_interval=CKPT, log=print))


def test_sigterm_mid_run_then_restart(tmp_path: Path) -> None:
    check_exact(run_scenario(tmp_path, MODE, "sigterm", duration=12, rate=RATE, checkpoint_interval=CKPT, log=print))


@pytest.mark.xfail(strict=True, reason="issue 13: SIGHUP kills the sidecar (no handler in "
                   "Sidecar.run_until_signalled, default action: terminate, exit -1, no final checkpoint)")
def test_sighup_mid_run(tmp_path: Path) -> None:
    check_exact(run_scenario(tmp_path, MODE, "sighup", duration=12, rate=RATE, checkpoint_interval=CKPT, log=print))


@pytest.mark.xfail(strict=True, reason="issue 13, what remains: the outage (5 s) spans three rotations, so "
                   "the file created just after the kill is rotated AND compressed before the restart; no "
                   "checkpoint ever saw it and a compressed file with no saved counterpart is never read (it "
                   "would double count), so its ~10k lines (one rotation period) are lost. That file, not the one "
                   "followed at the kill, was most of the loss: the rest of the followed file (the lines "
                   "between the last checkpoint and its rotation, a few hundred here) is now read from its .gz")
def test_kill9_outage_across_two_rotations(tmp_path: Path) -> None:
    """Down for two rotation periods: the file followed at the kill has been compressed meanwhile."""
    check_exact(run_scenario(tmp_path, MODE, "outage", duration=12, rate=RATE, checkpoint_interval=CKPT, log=print))
