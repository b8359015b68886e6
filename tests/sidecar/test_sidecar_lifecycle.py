"""State-dir lock, readiness, temporary files, sliced ingestion, gzip, price tables written in place."""

from __future__ import annotations

import errno
import gzip
import http.client
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import exporter.sidecar.checkpoint as checkpoint_module
import exporter.sidecar.price_reload as price_reload_module
from exporter.exposition.server import accepts_gzip
from exporter.prices.table import PriceTableChanging, load_price_table
from exporter.sidecar.checkpoint import StateDirLock, StateDirLocked
from exporter.sidecar.sidecar import Sidecar
from tests.support.processes import ROOT
from tests.support.sidecar import WALL, drain, make_config, record_line, requests_counted


def _sidecar(tmp_path: Path, **overrides: Any) -> Sidecar:
    return Sidecar(make_config(tmp_path, **overrides), wall_clock=lambda: WALL)


def _write(tmp_path: Path, lines: list[bytes]) -> None:
    (tmp_path / "logs").mkdir(exist_ok=True)
    with open(tmp_path / "logs" / "a.jsonl", "ab") as f:
        f.writelines(lines)


# --- one owner per state_dir ----------------------------------------------------------------


def test_a_lock_held_by_another_process_refuses_naming_the_holder(tmp_path: Path) -> None:
    state = tmp_path / "state"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from exporter.sidecar.checkpoint import StateDirLock; "
         f"StateDirLock({str(state)!r}).acquire(); print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        with pytest.raises(StateDirLocked) as refused:
            _sidecar(tmp_path)
        message = str(refused.value)
        assert str(state / "lock") in message and f"pid {holder.pid} on host " in message and "since" in message
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(30)
    _sidecar(tmp_path).close()  # the holder is gone: the lock is free


def test_the_lock_is_shared_within_a_process_and_released_by_the_last_close(tmp_path: Path) -> None:
    first, second = StateDirLock(tmp_path), StateDirLock(tmp_path)
    first.acquire()
    second.acquire()  # a restart simulated in one process (the tests do it)
    first.release()
    assert str(tmp_path.resolve()) in StateDirLock._held
    second.release()
    assert str(tmp_path.resolve()) not in StateDirLock._held
    second.release()  # idempotent


# --- temporary files and readiness -------------------------------------------------------------


def test_stale_temporaries_are_removed_at_start_with_a_log_line(tmp_path: Path, caplog: Any) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / ".checkpoint-000000000007.tmp").write_bytes(b"half a checkpoint")
    with caplog.at_level(logging.INFO):
        sidecar = _sidecar(tmp_path)
    try:
        assert not list(state.glob("*.tmp"))
        assert any("removed stale temporary" in r.getMessage() for r in caplog.records)
    finally:
        sidecar.close()


def test_failing_checkpoints_leave_no_tmp_and_fail_readiness_after_three(tmp_path: Path,
                                                                          monkeypatch: Any) -> None:
    _write(tmp_path, [record_line(i) for i in range(10)])
    sidecar = _sidecar(tmp_path)
    try:
        drain(sidecar)
        real_fsync = os.fsync

        def full_disk(fd: int) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(checkpoint_module.os, "fsync", full_disk)
        for attempt in (1, 2):
            assert not sidecar.checkpoint()
            assert not list((tmp_path / "state").glob("*.tmp")), attempt
            assert sidecar.readiness() == (True, "ready")
        assert not sidecar.checkpoint()
        ready, why = sidecar.readiness()
        assert not ready and "checkpoint failed 3 times in a row" in why and "No space left" in why
        assert not list((tmp_path / "state").glob("*.tmp"))
        monkeypatch.setattr(checkpoint_module.os, "fsync", real_fsync)
        assert sidecar.checkpoint()
        assert sidecar.readiness() == (True, "ready")
        assert len(list((tmp_path / "state").glob("checkpoint-*.ckpt"))) == 1  # numbering went on cleanly
    finally:
        sidecar.close()


def test_a_source_that_can_open_none_of_its_files_is_not_ready(tmp_path: Path, monkeypatch: Any) -> None:
    _write(tmp_path, [record_line(i) for i in range(3)])
    import exporter.sources.tail.tailer as tailer_module

    real_open = os.open

    def denied(path: Any, flags: int, *args: Any, **kw: Any) -> int:
        if str(path).endswith(".jsonl"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(tailer_module.os, "open", denied)
    sidecar = _sidecar(tmp_path)
    try:
        drain(sidecar)
        ready, why = sidecar.readiness()
        assert not ready and "source gw: can open none of its files" in why
        monkeypatch.setattr(tailer_module.os, "open", real_open)
        drain(sidecar)
        assert sidecar.readiness() == (True, "ready")
        assert requests_counted(sidecar) == 3
    finally:
        sidecar.close()


# --- sliced ingestion --------------------------------------------------------------------------


class RecordingLock:
    """Stands in for the pipeline's RLock and notes each acquire and release."""

    def __init__(self, inner: Any, events: list[str]) -> None:
        self.inner, self.events = inner, events

    def __enter__(self) -> RecordingLock:
        self.inner.acquire()
        self.events.append("acquire")
        return self

    def __exit__(self, *exc: object) -> None:
        self.events.append("release")
        self.inner.release()

    def acquire(self, *args: Any) -> bool:
        got: bool = self.inner.acquire(*args)
        return got

    def release(self) -> None:
        self.inner.release()


def test_ingestion_takes_the_lock_per_slice(tmp_path: Path) -> None:
    _write(tmp_path, [record_line(i) for i in range(95)])
    sidecar = _sidecar(tmp_path, ingest_slice_lines=10)
    events: list[str] = []
    sidecar.pipeline.lock = RecordingLock(sidecar.pipeline.lock, events)  # type: ignore[assignment]
    pumped: list[int] = []
    runner = sidecar.sources[0]
    real_pump: Callable[..., int] = runner.pump

    def pump(pipeline: Any, max_lines: int, wall: float) -> int:
        assert events[-1] == "acquire"  # inside a slice, and the previous one was released
        got = real_pump(pipeline, max_lines, wall)
        pumped.append(got)
        events.append(f"pump {max_lines}")
        return got

    runner.pump = pump  # type: ignore[method-assign]
    try:
        assert sidecar.ingest_once(max_lines=1000) == 95
        assert pumped == [10] * 9 + [5]
        assert events[:6] == ["acquire", "pump 10", "release", "acquire", "pump 10", "release"]
        assert requests_counted(sidecar) == 95
    finally:
        sidecar.close()


# --- gzip on /metrics, with a real HTTP client -------------------------------------------------


@pytest.mark.parametrize(("header", "gzipped"), [
    ("gzip", True), ("identity, gzip;q=0.5", True), ("gzip;q=0", False), ("*", True), ("*;q=0", False),
    ("br, deflate", False), (None, False), ("GZIP", True), ("gzip;q=oops", False),
])
def test_accepts_gzip(header: str | None, gzipped: bool) -> None:
    assert accepts_gzip(header) is gzipped


def test_metrics_are_gzipped_when_the_client_allows_it(tmp_path: Path) -> None:
    _write(tmp_path, [record_line(i) for i in range(30)])
    sidecar = _sidecar(tmp_path)
    sidecar.server.start()
    try:
        drain(sidecar)
        plain, _ = sidecar.metrics(None)
        conn = http.client.HTTPConnection("127.0.0.1", sidecar.port, timeout=10)
        conn.request("GET", "/metrics", headers={"Accept-Encoding": "gzip, deflate"})  # what Prometheus sends
        response = conn.getresponse()
        body = response.read()
        assert response.status == 200 and response.getheader("Content-Encoding") == "gzip"
        assert response.getheader("Vary") == "Accept-Encoding"
        assert int(response.getheader("Content-Length") or -1) == len(body) < len(plain)
        assert gzip.decompress(body) == plain
        conn.request("GET", "/metrics")  # same connection (HTTP/1.1), no Accept-Encoding: plain text
        response = conn.getresponse()
        assert response.getheader("Content-Encoding") is None and response.read() == plain
        assert response.getheader("Vary") == "Accept-Encoding"
        conn.close()
    finally:
        sidecar.close()


# --- a price table written in place ------------------------------------------------------------

HALF_1 = """\
schema: llm-savings-prices/v1
versions:
  - version: "v1"
    effective_from: "2026-01-01T00:00:00Z"
    families:
      openai: {}
    models:
      gpt-4o:
        family: openai
        input: 2.0
        output: 10.0
"""
HALF_2 = """\
  - version: "v2"
    effective_from: "2026-11-01T00:00:00Z"
    families:
      openai: {}
    models:
      gpt-4o:
        family: openai
        input: 3.0
        output: 10.0
"""


def test_the_loader_refuses_a_file_that_changes_while_it_is_read(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(HALF_1)  # the first half alone is a valid table: only the stat check can tell

    def writer_goes_on(_seconds: float) -> None:
        with prices.open("a") as f:
            f.write(HALF_2)

    with pytest.raises(PriceTableChanging):
        load_price_table(prices, settle_seconds=0.01, sleep=writer_goes_on)
    assert [v.version for v in load_price_table(prices, settle_seconds=0.01).versions] == ["v1", "v2"]


def test_a_table_written_in_two_halves_is_retried_never_applied_half(tmp_path: Path, monkeypatch: Any) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(HALF_1.replace('"v1"', '"v0"'))
    sidecar = _sidecar(tmp_path, prices=str(prices))
    halves = [HALF_2]

    def load_while_writing(path: Any, settle_seconds: float = 0.0, sleep: Any = None) -> Any:
        def writer(_seconds: float) -> None:
            if halves:  # the writer finishes while the first reload is reading
                with prices.open("a") as f:
                    f.write(halves.pop())
        return load_price_table(path, settle_seconds, writer)

    monkeypatch.setattr(price_reload_module, "load_price_table", load_while_writing)
    try:
        prices.write_text(HALF_1)  # the writer has written its first half...
        sidecar.check_prices(force=True)  # ...and a SIGHUP reload comes in between
        assert [v.version for v in sidecar.prices.versions] == ["v0"]  # not applied
        assert sidecar.health.price_reloads == {"success": 0, "error": 0}  # nor counted as bad
        sidecar.check_prices()  # the next pass retries: the file now holds still
        assert [v.version for v in sidecar.prices.versions] == ["v1", "v2"]
        assert sidecar.health.price_reloads == {"success": 1, "error": 0}
    finally:
        sidecar.close()
