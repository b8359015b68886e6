"""The sidecar feeds the pipeline a batch per read: the edges that creates.

A checkpoint between two slices of one read (the rest of the chunk is buffered, not
counted, and must not be in the state), a crash between a batch's count and its
checkpoint, rotation in the middle of a batch, and rejected or failing lines inside one
batch logged at their own byte offsets (never their content).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest

from exporter.sidecar.sidecar import Sidecar
from tests.support.sidecar import WALL, drain, make_config, record_line


def _sidecar(tmp_path: Path, slice_lines: int = 2000) -> Sidecar:
    sources = [{"name": "gw", "paths": [str(tmp_path / "logs" / "app.jsonl*")], "watch": False,
                "poll_interval_seconds": 0.02}]
    return Sidecar(make_config(tmp_path, sources=sources, ingest_slice_lines=slice_lines,
                               checkpoint_interval_seconds=3600.0), wall_clock=lambda: WALL)


def _write(path: Path, lines: list[bytes]) -> None:
    path.parent.mkdir(exist_ok=True)
    with open(path, "ab") as f:
        f.writelines(lines)


def _totals(sidecar: Sidecar) -> tuple[int, int]:
    with sidecar.pipeline.lock:
        months = sidecar.pipeline.aggregates.month_totals().values()
        return sum(m["requests"] for m in months), sum(m["duplicates"] for m in months)


def test_a_checkpoint_between_slices_of_one_read_then_a_crash_counts_each_line_once(tmp_path: Path) -> None:
    app = tmp_path / "logs" / "app.jsonl"
    _write(app, [record_line(i) for i in range(50)])  # one read holds all 50
    first = _sidecar(tmp_path, slice_lines=7)
    assert first.ingest_once(max_lines=20) == 20  # slices of 7, 7, 6: 30 lines stay buffered
    assert _totals(first) == (20, 0)
    assert first.checkpoint()
    assert first.ingest_once(max_lines=15) == 15  # counted, never checkpointed: then the crash
    assert _totals(first) == (35, 0)
    first.close()  # no final checkpoint, as after kill -9
    second = _sidecar(tmp_path, slice_lines=7)
    assert _totals(second) == (20, 0)  # the checkpoint holds the 20 and their offsets, nothing buffered
    drain(second)
    assert _totals(second) == (50, 0)  # lines 21-35 counted once more in this run only, none twice
    second.close()


def test_rotation_in_the_middle_of_a_batch_then_a_restart(tmp_path: Path) -> None:
    app = tmp_path / "logs" / "app.jsonl"
    _write(app, [record_line(i) for i in range(30)])
    first = _sidecar(tmp_path, slice_lines=4)
    assert first.ingest_once(max_lines=10) == 10
    assert first.checkpoint()
    os.rename(app, tmp_path / "logs" / "app.jsonl.1")
    _write(tmp_path / "logs" / "app.jsonl.1", [record_line(i) for i in range(30, 35)])  # the old descriptor
    _write(app, [record_line(i) for i in range(35, 45)])
    assert first.ingest_once(max_lines=12) == 12  # still inside the rotated file
    first.close()  # crash
    second = _sidecar(tmp_path, slice_lines=4)
    drain(second)
    assert _totals(second) == (45, 0)
    second.close()


def test_rejected_lines_inside_one_batch_are_logged_at_their_own_offsets(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    app = tmp_path / "logs" / "app.jsonl"
    secret = b"PROMPT-TEXT-must-not-leak"
    bad = b'{"request_id": "x", "prompt": "' + secret + b'"\n'  # not JSON
    lines = [record_line(0), bad, record_line(1), record_line(2), bad,
             record_line(3).replace(b"\n", b"\r\n"), bad.replace(b"\n", b"\r\n"), record_line(4)]
    _write(app, lines)
    offsets = [sum(map(len, lines[:i])) for i in (1, 4, 6)]
    sidecar = _sidecar(tmp_path)
    with caplog.at_level(logging.WARNING):
        drain(sidecar)
    sidecar.close()
    logged = [r.getMessage() for r in caplog.records if "rejected line at" in r.getMessage()]
    assert logged == [f"source gw: rejected line at {app} byte offset {n}: invalid_json" for n in offsets]
    assert _totals(sidecar) == (5, 0)
    assert all(secret.decode() not in r.getMessage() for r in caplog.records)


def test_a_line_that_breaks_the_pipeline_inside_a_batch_is_logged_at_its_offset(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    app = tmp_path / "logs" / "app.jsonl"
    lines = [record_line(i) for i in range(6)]
    _write(app, lines)
    sidecar = _sidecar(tmp_path)
    real = sidecar.pipeline.ingest_watched
    calls = {"n": 0}

    def flaky(batch: list[bytes], first: int, watch: Any) -> None:
        for at in range(first, len(batch)):
            calls["n"] += 1
            watch.at = at
            if calls["n"] in (3, 4):  # two lines in a row break the pipeline
                raise RuntimeError("injected fault")
            real(batch[at:at + 1], 0, type(watch)())

    sidecar.pipeline.ingest_watched = flaky  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING):
        drain(sidecar)
    sidecar.close()
    errors = [r.getMessage() for r in caplog.records if "counted as internal_error" in r.getMessage()]
    assert errors == [f"source gw: RuntimeError at {app} offset {sum(map(len, lines[:i]))}; counted as internal_error"
                      for i in (2, 3)]
    assert _totals(sidecar) == (4, 0)
    with sidecar.pipeline.lock:
        assert sidecar.pipeline.aggregates.rejected == {("unknown", "internal_error"): 2}
