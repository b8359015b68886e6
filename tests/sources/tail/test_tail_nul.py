"""NUL bytes: the hole a non-O_APPEND writer leaves after a copytruncate, and NULs in a line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from exporter.sources.tail import Tailer
from tests.support.tail import Oracle, append, copytruncate, expect_ids, lines


class OffsetWriter:
    """A writer that keeps its own file offset (no O_APPEND), like many loggers."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)

    def write(self, data: bytes) -> None:
        os.write(self.fd, data)

    def close(self) -> None:
        os.close(self.fd)


@pytest.mark.parametrize("poll_between", [True, False])
def test_leading_nuls_after_copytruncate_are_skipped_and_counted(tmp_path: Path, poll_between: bool) -> None:
    log = tmp_path / "app.log"
    writer = OffsetWriter(log)
    writer.write(lines(range(100)))
    hole = log.stat().st_size
    oracle = Oracle([str(tmp_path / "*.log")], use_watchdog=False, max_line_bytes=1000)
    oracle.poll()
    copytruncate(log, tmp_path / "app.log.1")
    if poll_between:
        oracle.poll()  # size 0 < offset: truncation seen by size
    writer.write(lines(range(100, 150)))  # lands at the old offset: a hole of NULs before it
    assert log.read_bytes()[:hole] == b"\0" * hole
    oracle.drain()
    writer.close()
    oracle.assert_exactly(expect_ids(range(150)))
    st = oracle.tailer.stats()
    assert st.nul_bytes_skipped == hole  # far more than max_line_bytes: not a long line
    assert st.skipped == {"line_too_long": 0, "nul_bytes": 0}
    assert st.truncations == 1
    oracle.close()


def test_nul_hole_split_across_reads(tmp_path: Path) -> None:
    """A hole bigger than the read chunk, then a line: still one line, no skip."""
    log = tmp_path / "app.log"
    with open(log, "wb") as f:
        f.truncate(3 << 20)  # sparse: 3 MiB of NULs
        f.seek(0, os.SEEK_END)
        f.write(lines(range(5)))
    with Tailer([str(log)], use_watchdog=False, max_line_bytes=4096) as t:
        events = t.poll()
        assert [e.skipped for e in events] == [None] * 5
        assert events[0].offset == 3 << 20
        assert t.stats().nul_bytes_skipped == 3 << 20
        assert t.state()["files"][0]["offset"] == log.stat().st_size


def test_nul_inside_a_line_is_a_skipped_event(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    append(log, lines(range(3)) + b'{"request_id":"bad\0"}\n' + lines(range(3, 5)))
    with Tailer([str(log)], use_watchdog=False) as t:
        events = t.poll()
    assert [e.skipped for e in events] == [None, None, None, "nul_bytes", None, None]
    assert events[3].line == b""


def test_nul_hole_while_stopped(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    writer = OffsetWriter(log)
    writer.write(lines(range(50)))
    oracle = Oracle([str(log)], use_watchdog=False)
    oracle.poll()
    oracle.checkpoint()
    oracle.tailer.close()
    copytruncate(log, tmp_path / "elsewhere.1")
    writer.write(lines(range(50, 80)))
    writer.close()
    warnings = oracle.crash()
    assert warnings
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(80)))
    oracle.close()


@pytest.mark.parametrize("prefix", [b"", b'{"request_id":"r5",'])
def test_nuls_at_eof_are_read_again_when_the_data_becomes_visible(tmp_path: Path, prefix: bytes) -> None:
    """NFS or preallocation: the size grows before the data is visible; zeros are read meanwhile."""
    log = tmp_path / "app.log"
    append(log, lines(range(5)))
    real = lines([5])
    assert real.startswith(prefix)
    fd = os.open(log, os.O_WRONLY)
    end = log.stat().st_size
    os.pwrite(fd, prefix + b"\0" * (len(real) - len(prefix)), end)  # size known, data not yet
    with Tailer([str(log)], use_watchdog=False) as t:
        assert len(t.poll()) == 5
        assert t.poll() == []
        assert t.state()["files"][0]["offset"] == end  # the zeros are not committed
        os.pwrite(fd, real, end)  # the data arrives
        os.close(fd)
        (ev,) = t.poll()
        assert ev.line + b"\n" == real
        assert t.stats().nul_bytes_skipped == 0
        assert t.stats().skipped["nul_bytes"] == 0
