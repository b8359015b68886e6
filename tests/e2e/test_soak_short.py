"""Short versions of the load and soak runs (tests/soak/), part of the default run.

The long ones are ``python tests/soak/load_otlp.py --seconds 120`` and
``python tests/soak/soak_tail.py --minutes 10``; these run the same code for
about 20 s each, on loopback, against the real sidecar subprocess.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.soak import load_otlp, soak_tail

pytestmark = pytest.mark.slow


def test_otlp_receiver_under_load_loses_nothing_accepted(tmp_path: Path) -> None:
    figures = load_otlp.run(12, clients=3, slow=2, oversized=1, size=40, max_scrape_seconds=2.0, workdir=tmp_path)
    print(figures)
    assert figures["spans_counted"] == figures["spans_accepted"], figures
    assert isinstance(figures["spans_accepted"], int) and figures["spans_accepted"] > 1000, figures
    assert figures["oversized_413"], figures
    assert figures["ok"], figures


def test_tailing_with_rotation_and_restarts_counts_every_id_once(tmp_path: Path) -> None:
    figures = soak_tail.run(0.33, rotate_seconds=1.5, restart_seconds=5.0, rate=300.0, workdir=tmp_path, log=False)
    print(figures)
    assert figures["requests_counted"] == figures["unique_ids"], figures
    assert figures["duplicates_counted"] == figures["resends"], figures
    restarts = figures["restarts"]
    assert isinstance(restarts, list) and len(restarts) >= 2 and any("SIGKILL" in r for r in restarts), figures
    assert figures["ok"], figures
