"""Issue 13: a crash loop faster than the checkpoint interval must still make progress.

The sidecar is killed (SIGKILL) every ~2 s, with the product's default checkpoint interval (5 s),
while logrotate (create, rotate 5, every 2 s) deletes a rotated file ~10 s after its rotation.
Every run reads everything within milliseconds of starting; a correct sidecar commits what it
caught up with, so nothing is lost. (Before the commit points of issue 13 no run lived long
enough to write a checkpoint: each restart resumed from the same old position, and once the files
it still had to re-read were deleted by logrotate their lines were lost.)
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.faults import LOGROTATE, check_exact, run_scenario

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.faults,
    pytest.mark.skipif(not os.path.exists(LOGROTATE), reason="logrotate is not installed (apt-get install logrotate)"),
]


def test_kill_every_2s_with_default_checkpoint_interval_loses_nothing(tmp_path: Path) -> None:
    check_exact(run_scenario(tmp_path, "create", "kill9", duration=24, restarts=10, min_gap=2.0,
                             checkpoint_interval=5.0, log=print))
