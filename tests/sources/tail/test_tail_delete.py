"""Deletion, re-creation and inode reuse."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.tail import FakeClock, Oracle, append, expect_ids, lines


def test_delete_and_recreate(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    append(log, lines(range(50)))
    clock = FakeClock()
    oracle = Oracle([str(log)], use_watchdog=False, clock=clock, rotate_grace=1.0)
    oracle.poll()
    with open(log, "ab") as old:
        old.write(lines(range(50, 60)))  # unread when the file is deleted
        os.unlink(log)
        append(log, lines(range(100, 120)))  # re-created under the same name
        oracle.poll()
        old.write(lines(range(60, 65)))  # a writer still holding the deleted file
    oracle.drain()
    oracle.assert_exactly(expect_ids([*range(65), *range(100, 120)]))
    st = oracle.tailer.stats()
    assert st.deletions == 1
    assert st.files_followed == 2
    clock.advance(1.5)
    oracle.poll()
    assert oracle.tailer.stats().files_followed == 1  # the deleted one is closed
    oracle.close()


def test_deleted_while_stopped_after_being_read_to_its_end_is_no_loss(tmp_path: Path) -> None:
    """Read to its end, then gone: normal rotation, no warning, nothing lost (test_tail_lost_bytes for a loss)."""
    log = tmp_path / "app.log"
    append(log, lines(range(10)))
    oracle = Oracle([str(tmp_path / "*.log")], use_watchdog=False)
    oracle.poll()
    oracle.checkpoint()
    oracle.tailer.close()
    append(tmp_path / "other.log", lines(range(10, 20)))  # before the unlink: a new inode
    os.unlink(log)
    warnings = oracle.crash()
    assert warnings == []
    assert sum(oracle.tailer.stats().bytes_lost.values()) == 0
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(20)))
    oracle.close()


def test_inode_reused_while_stopped(tmp_path: Path) -> None:
    """Delete, re-create: ext4 often hands out the same inode. The fingerprint tells them apart."""
    log = tmp_path / "app.log"
    append(log, lines(range(30)))
    oracle = Oracle([str(log)], use_watchdog=False)
    oracle.poll()
    oracle.checkpoint()
    oracle.tailer.close()
    ino = log.stat().st_ino
    reused = False
    for attempt in range(20):  # try to get the same inode back
        os.unlink(log)
        append(log, lines(range(1000 * (attempt + 1), 1000 * (attempt + 1) + 40)))
        if log.stat().st_ino == ino:
            reused = True
            break
    warnings = oracle.crash()
    assert len(warnings) == 1
    assert ("identity changed" in warnings[0]) if reused else ("gone" in warnings[0])
    oracle.drain()
    last = 1000 * (attempt + 1)
    oracle.assert_exactly(expect_ids([*range(30), *range(last, last + 40)]))
    oracle.close()


def test_inode_reuse_simulated_by_state(tmp_path: Path) -> None:
    """Deterministic variant: a checkpoint whose fingerprint no longer fits the file."""
    log = tmp_path / "app.log"
    append(log, lines(range(30)))
    oracle = Oracle([str(log)], use_watchdog=False)
    oracle.poll()
    oracle.checkpoint()
    assert oracle.saved_state is not None
    oracle.saved_state["files"][0]["head_hash"] = "0" * 32  # another file had this inode
    warnings = oracle.crash()
    assert "inode reused" in warnings[0]
    assert oracle.tailer.stats().fingerprint_mismatches == 1
    oracle.drain()
    assert oracle.consumed == [f"r{i}" for i in [*range(30), *range(30)]]  # read as new
    oracle.close()


def test_unreadable_file_does_not_stop_the_others(tmp_path: Path) -> None:
    """A file that fails to read (simulated: its descriptor is gone) is counted, others go on."""
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    append(a, lines(range(5)))
    append(b, lines(range(5, 10)))
    oracle = Oracle([str(tmp_path / "*.log")], use_watchdog=False)
    oracle.poll()
    append(a, lines(range(10, 12)))
    append(b, lines(range(12, 14)))
    broken = next(f for f in oracle.tailer._files.values() if f.path == str(a))
    os.close(broken.fd)  # reads of a.log now fail with EBADF
    oracle.poll()
    assert oracle.tailer.stats().read_errors >= 1
    oracle.assert_exactly(expect_ids([*range(10), 12, 13]))
    fd = os.open(a, os.O_RDONLY)  # give a descriptor back so close() succeeds
    if fd != broken.fd:
        os.dup2(fd, broken.fd)
        os.close(fd)
    oracle.close()
