"""Open files capped (issue 13 item 2): ``max_open_files``, parking and reopening by identity,
no descriptor leaks, EMFILE during restore keeps the saved offset."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from exporter.sources.tail import Tailer
from tests.support.tail import Oracle, append, expect_ids, lines


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(autouse=True)
def _linux() -> None:
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd")


def test_more_files_than_the_cap_are_all_read_once(tmp_path: Path) -> None:
    for n in range(20):
        append(tmp_path / f"gw-{n:02d}.log", lines(range(n * 100, n * 100 + 10)))
    oracle = Oracle([str(tmp_path / "*.log")], use_watchdog=False, max_open_files=3)
    for _ in range(40):
        oracle.poll()
        assert oracle.tailer.stats().open_files <= 3
    oracle.assert_exactly(expect_ids([i for n in range(20) for i in range(n * 100, n * 100 + 10)]))
    # a parked (closed, idle) file that grows is reopened and read on
    append(tmp_path / "gw-00.log", lines(range(5000, 5005)))
    append(tmp_path / "gw-07.log", lines(range(5100, 5105)))
    for _ in range(10):
        oracle.poll()
        assert oracle.tailer.stats().open_files <= 3
    assert sorted(oracle.consumed[-10:]) == sorted(f"r{i}" for i in [*range(5000, 5005), *range(5100, 5105)])
    assert oracle.tailer.stats().files_matched == 20
    oracle.close()


def test_a_parked_file_replaced_under_its_name_is_a_new_file(tmp_path: Path) -> None:
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    append(a, lines(range(10)))
    append(b, lines(range(100, 110)))
    oracle = Oracle([str(tmp_path / "*.log")], use_watchdog=False, max_open_files=1)
    for _ in range(6):
        oracle.poll()
    assert len(oracle.consumed) == 20
    os.unlink(a)  # whichever was parked: gone; the name now holds another file
    append(a, lines(range(200, 205)))
    for _ in range(6):
        oracle.poll()
    oracle.assert_exactly(expect_ids([*range(10), *range(100, 110), *range(200, 205)]))
    oracle.close()


def test_compressed_and_copy_waiting_files_hold_no_descriptor(tmp_path: Path) -> None:
    import gzip

    log = tmp_path / "app.log"
    append(log, lines(range(300), pad=5))
    (tmp_path / "app.log.2.gz").write_bytes(gzip.compress(b"x" * 100))
    (tmp_path / "app.log.copy").write_bytes(log.read_bytes())  # a copy of a followed file: waits
    oracle = Oracle([str(tmp_path / "app.log*")], use_watchdog=False, copy_settle=0.0)
    oracle.poll()
    oracle.poll()
    assert oracle.tailer.stats().open_files == 1  # only app.log
    oracle.assert_exactly(expect_ids(range(300)))
    oracle.close()


def test_open_does_not_leak_when_fstat_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "app.log"
    append(log, lines(range(3)))
    tailer = Tailer([str(log)], use_watchdog=False)
    before = _fds()
    real_fstat = os.fstat

    def failing_fstat(fd: int) -> os.stat_result:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "fstat", failing_fstat)
    with pytest.raises(OSError):
        tailer._open(str(log))
    monkeypatch.setattr(os, "fstat", real_fstat)
    assert _fds() == before
    tailer.close()


def test_emfile_during_restore_keeps_the_offset_and_retries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "app.log"
    append(log, lines(range(10)))
    oracle = Oracle([str(log)], use_watchdog=False)
    oracle.drain()
    oracle.checkpoint()
    append(log, lines(range(10, 15)))
    real_open = os.open

    def emfile(path: str, flags: int, *args: int) -> int:
        if str(path) == str(log):
            raise OSError(errno.EMFILE, "Too many open files", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", emfile)
    warnings = oracle.crash()
    assert not any("gone" in w for w in warnings), warnings  # out of descriptors is not "missing"
    assert not oracle.tailer.up  # it has a file and can open none
    state = oracle.tailer.state()  # a checkpoint taken meanwhile keeps the saved offset
    assert [f["offset"] for f in state["files"]] == [oracle.saved_state["files"][0]["offset"]]  # type: ignore[index]
    assert oracle.poll() == []
    monkeypatch.setattr(os, "open", real_open)
    oracle.drain()
    assert oracle.tailer.up
    oracle.assert_exactly(expect_ids(range(15)))
    assert sum(oracle.tailer.stats().bytes_lost.values()) == 0
    oracle.close()


def test_restore_does_not_leak_when_the_first_read_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "app.log"
    append(log, lines(range(10)))
    oracle = Oracle([str(log)], use_watchdog=False)
    oracle.drain()
    oracle.checkpoint()
    oracle.tailer.close()
    before = _fds()
    real_pread = os.pread

    def eio(fd: int, n: int, pos: int) -> bytes:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "pread", eio)
    tailer = Tailer([str(log)], use_watchdog=False)
    warnings = tailer.restore(oracle.saved_state)  # type: ignore[arg-type]
    monkeypatch.setattr(os, "pread", real_pread)
    assert any("retrying later" in w for w in warnings)
    assert _fds() == before
    append(log, lines(range(10, 12)))
    assert [e.line.count(b"r1") for e in tailer.poll()] == [1, 1]  # resumed at the saved offset
    tailer.close()


def test_a_glob_matching_nothing_shows(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    tailer = Tailer([str(tmp_path / "*.log")], use_watchdog=False)
    tailer.poll()
    tailer.poll()
    assert tailer.stats().files_matched == 0
    assert sum("no file matches" in r.getMessage() for r in caplog.records) == 1
    tailer.close()
