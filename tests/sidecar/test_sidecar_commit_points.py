"""Commit points that keep up with the files (issue 13 item 1), bytes lost in the health
samples across restarts, and rejected lines logged by place, never by content (item 4).

The sidecar's ingest thread runs (``start``) with a checkpoint interval of an hour: every
checkpoint seen here is one of the extra commit points. Polls with a deadline, no sleeps."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from exporter import catalog
from exporter.sidecar.sidecar import Sidecar
from tests.support.processes import poll
from tests.support.sidecar import WALL, drain, make_config, record_line


def _sidecar(tmp_path: Path, interval: float = 3600.0) -> Sidecar:
    sources = [{"name": "gw", "paths": [str(tmp_path / "logs" / "app.jsonl*")], "watch": False,
                "poll_interval_seconds": 0.02}]
    return Sidecar(make_config(tmp_path, sources=sources, checkpoint_interval_seconds=interval),
                   wall_clock=lambda: WALL)


def _write(path: Path, lines: list[bytes]) -> None:
    path.parent.mkdir(exist_ok=True)
    with open(path, "ab") as f:
        f.writelines(lines)


def _sample(sidecar: Sidecar, spec: catalog.MetricSpec, labels: tuple[str, ...]) -> float | None:
    with sidecar.pipeline.lock:
        found = [s.value for s in sidecar.health_samples() if s.metric is spec and s.labels == labels]
    return found[0] if found else None


def test_checkpoint_right_after_restore_and_first_pass(tmp_path: Path) -> None:
    app = tmp_path / "logs" / "app.jsonl"
    _write(app, [record_line(i) for i in range(50)])
    sidecar = _sidecar(tmp_path)
    sidecar.start()
    try:
        poll(lambda: sidecar.health.checkpoint_writes >= 1 or None, 10, "the first checkpoint")
    finally:
        sidecar.stop()
    again = _sidecar(tmp_path)  # the first commit point already held the 50 lines
    assert again.summary()["requests"] == 50
    again.close()


def test_rotation_triggers_a_checkpoint_soon(tmp_path: Path) -> None:
    app = tmp_path / "logs" / "app.jsonl"
    _write(app, [record_line(i) for i in range(20)])
    sidecar = _sidecar(tmp_path)
    sidecar.start()
    try:
        poll(lambda: sidecar.health.checkpoint_writes >= 1 or None, 10, "the first checkpoint")
        writes = sidecar.health.checkpoint_writes
        os.rename(app, app.with_name("app.jsonl.1"))
        _write(app, [record_line(i) for i in range(20, 30)])
        poll(lambda: sidecar.health.checkpoint_writes > writes or None, 10, "a checkpoint after the rotation")
    finally:  # like a kill -9: no final checkpoint, what survives is what the commit points wrote
        sidecar._stop.set()
        for thread in sidecar._threads:
            thread.join(timeout=30)
        sidecar.close()
    again = _sidecar(tmp_path)
    drain(again)
    assert again.summary()["requests"] == 30
    again.close()


def test_checkpoint_due_is_rate_limited(tmp_path: Path) -> None:
    sidecar = _sidecar(tmp_path)
    try:
        assert sidecar.checkpoint_due(100.0, 100.0, None)  # first pass after start-up
        hints = sidecar._commit_hints()
        assert not sidecar.checkpoint_due(100.5, 100.0, hints)
        assert not sidecar.checkpoint_due(100.5, 100.0, hints - 1)  # a rotation, but < 1 s ago
        assert sidecar.checkpoint_due(101.0, 100.0, hints - 1)
        assert sidecar.checkpoint_due(101.0, 100.0, hints, catching_up=True)
        assert not sidecar.checkpoint_due(101.0, 100.0, hints)
    finally:
        sidecar.close()


def test_bytes_lost_survive_restarts_in_the_health_samples(tmp_path: Path) -> None:
    app = tmp_path / "logs" / "app.jsonl"
    _write(app, [record_line(i) for i in range(40)])
    sidecar = _sidecar(tmp_path)
    sidecar.ingest_once(max_lines=10)  # 30 lines read into the buffer, not returned
    assert sidecar.checkpoint()
    offset = sidecar.sources[0].tailer.state()["files"][0]["offset"]
    unread = app.stat().st_size - offset
    sidecar.close()
    os.unlink(app)  # gone while stopped, with unread bytes
    again = _sidecar(tmp_path)
    assert _sample(again, catalog.SOURCE_BYTES_LOST_TOTAL, ("gw", "gone_while_stopped")) == unread
    assert again.checkpoint()
    again.close()
    third = _sidecar(tmp_path)
    assert _sample(third, catalog.SOURCE_BYTES_LOST_TOTAL, ("gw", "gone_while_stopped")) == unread
    assert _sample(third, catalog.SOURCE_FILES, ("gw",)) is not None
    assert _sample(third, catalog.SOURCE_OPEN_FILES, ("gw",)) == 0
    third.close()


def test_rejected_lines_are_logged_by_place_never_by_content(tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    app = tmp_path / "logs" / "app.jsonl"
    secret = b"PROMPT-TEXT-must-not-leak"
    good = record_line(1)
    bad = b'{"request_id": "x", "prompt": "' + secret + b'"\n'  # not JSON: rejected
    _write(app, [good] + [bad] * 15)
    sidecar = _sidecar(tmp_path)
    with caplog.at_level(logging.WARNING, logger="exporter.sidecar.sidecar"):
        drain(sidecar)
    sidecar.close()
    logged = [r.getMessage() for r in caplog.records if "rejected line at" in r.getMessage()]
    assert len(logged) == 10  # at most 10 per minute and source
    assert logged[0] == f"source gw: rejected line at {app} byte offset {len(good)}: invalid_json"
    assert all(secret.decode() not in r.getMessage() for r in caplog.records)
    assert sidecar.sources[0].reject_log.total == 15
