"""copytruncate: the content is copied to app.log.1, then app.log is truncated in place."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.tail import Oracle, append, copytruncate, expect_ids, lines


def test_copy_outside_glob(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    append(log, lines(range(100)))
    oracle = Oracle([str(tmp_path / "*.log")], use_watchdog=False)
    oracle.poll()
    copytruncate(log, tmp_path / "app.log.1")
    append(log, lines(range(100, 150)))
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(150)))
    st = oracle.tailer.stats()
    assert st.truncations == 1
    assert st.copies_adopted == 0
    oracle.close()


@pytest.mark.parametrize("poll_between", [True, False])
def test_copy_inside_glob_recovers_lines_written_before_truncation(tmp_path: Path, poll_between: bool) -> None:
    """Lines 100..119 reach the original after our last read and survive only in the copy."""
    log = tmp_path / "app.log"
    append(log, lines(range(100)))
    oracle = Oracle([str(tmp_path / "app.log*")], use_watchdog=False)
    oracle.poll()
    append(log, lines(range(100, 120)))
    copytruncate(log, tmp_path / "app.log.1")
    if poll_between:
        oracle.poll()  # sees the truncation and the copy in the same pass
    append(log, lines(range(120, 150)))
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(150)))
    st = oracle.tailer.stats()
    assert st.truncations == 1
    assert st.copies_adopted == 1
    oracle.close()


@pytest.mark.parametrize("rounds", [2, 3, 5])
def test_every_round_of_copytruncate_is_recognised_when_each_is_read_in_one_poll(tmp_path: Path, rounds: int) -> None:
    """The file is read from 0 in the same poll that finds the truncation; the next copy must still match.

    The followed file's head was left empty after a truncation until a later poll
    refreshed it, so when the gateway's next copytruncate came first, nothing was
    retired and app.log.N was read again from 0 (found with a writer thread
    around a real tailer; here the same order of events, driven by hand).
    """
    log = tmp_path / "app.log"
    append(log, lines(range(100)))
    oracle = Oracle([str(tmp_path / "app.log*")], use_watchdog=False)
    oracle.poll()
    written = 100
    for round_ in range(1, rounds + 1):
        copytruncate(log, tmp_path / f"app.log.{round_}")
        append(log, lines(range(written, written + 40 + round_)))  # the next batch, before our next poll
        written += 40 + round_
        oracle.poll()  # truncation, the copy and the new batch, all in this one pass
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(written)))
    st = oracle.tailer.stats()
    assert st.truncations == rounds
    assert st.copies_adopted == rounds
    oracle.close()


def test_copy_seen_before_truncation_is_not_read(tmp_path: Path) -> None:
    """The copy appears while the original still has its content: it waits, unread."""
    log = tmp_path / "app.log"
    append(log, lines(range(100)))
    oracle = Oracle([str(tmp_path / "app.log*")], use_watchdog=False, copy_settle=0.0)
    oracle.poll()
    shutil.copyfile(log, tmp_path / "app.log.1")
    append(log, lines(range(100, 110)))  # written after the copy: only in the original
    oracle.poll()
    assert oracle.tailer.stats().files_waiting == 1
    oracle.assert_exactly(expect_ids(range(110)))
    with open(log, "r+b") as f:
        f.truncate(0)
    append(log, lines(range(110, 120)))
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(120)))
    assert oracle.tailer.stats().copies_adopted == 1
    oracle.close()


def test_copy_smaller_than_what_was_read_is_consumed(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    append(log, lines(range(100)))
    oracle = Oracle([str(tmp_path / "app.log*")], use_watchdog=False)
    oracle.poll()
    data = log.read_bytes()
    append(log, lines(range(100, 110)))
    oracle.poll()  # read past what the copy will hold
    (tmp_path / "app.log.1").write_bytes(data)
    log.write_bytes(b"")  # truncate
    append(log, lines(range(110, 115)))
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(115)))
    oracle.close()


def test_copytruncate_while_stopped_copy_inside_glob(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    append(log, lines(range(100)))
    oracle = Oracle([str(tmp_path / "app.log*")], use_watchdog=False)
    oracle.poll()
    oracle.checkpoint()
    oracle.tailer.close()
    # While the sidecar is down:
    append(log, lines(range(100, 120)))
    copytruncate(log, tmp_path / "app.log.1")
    append(log, lines(range(120, 150)))
    warnings = oracle.crash()
    assert any("identity changed" in w for w in warnings), warnings
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(150)))
    assert oracle.tailer.stats().copies_adopted == 1
    oracle.close()


def test_copytruncate_while_stopped_copy_outside_glob(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    append(log, lines(range(100)))
    oracle = Oracle([str(tmp_path / "*.log")], use_watchdog=False)
    oracle.poll()
    oracle.checkpoint()
    oracle.tailer.close()
    copytruncate(log, tmp_path / "app.log.1")
    append(log, lines(range(100, 130)))
    warnings = oracle.crash()
    assert warnings
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(130)))
    oracle.close()
