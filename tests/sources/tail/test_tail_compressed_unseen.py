"""Issue 13, what remained: a file created after the last checkpoint, rotated AND compressed while down.

No checkpoint saw it, so it has no saved counterpart. At restore only, a compressed file in the
globs whose mtime is later than the checkpoint's ``saved_at`` (wall clock, injected here) and whose
decompressed head matches no saved, retired, waiting or recovered file is read from 0, then retired.
File mtimes are set by hand relative to the injected wall clock: nothing waits on time.
"""

from __future__ import annotations

import gzip
import json
import lzma
import os
import time
from pathlib import Path
from typing import Any

from exporter.sources.tail import Tailer
from exporter.sources.tail.compressed import MAX_UNSEEN
from tests.support.tail import Oracle, append, expect_ids, ids_of, lines


class Wall:
    """The injected wall clock; it starts near the real time, as file mtimes are real."""

    def __init__(self) -> None:
        self.now = float(int(time.time()))

    def __call__(self) -> float:
        return self.now


def roundtrip(state: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(json.dumps(state))
    return loaded


def gz(path: Path, data: bytes, mtime: float) -> None:
    path.write_bytes(gzip.compress(data))
    os.utime(path, (mtime, mtime))


def tailer(tmp_path: Path, wall: Wall, pattern: str = "app.log*") -> Tailer:
    return Tailer([str(tmp_path / pattern)], use_watchdog=False, wall_clock=wall)


def checkpoint_after_reading(tmp_path: Path, ids: range, wall: Wall) -> dict[str, Any]:
    append(tmp_path / "app.log", lines(ids, 20))
    t = tailer(tmp_path, wall)
    assert ids_of(t.poll()) == [f"r{i}" for i in ids]
    state = roundtrip(t.state())
    t.close()
    assert state["saved_at"] == wall.now
    return state


def test_created_rotated_and_gzipped_while_down_is_read_exactly_once(tmp_path: Path) -> None:
    wall = Wall()
    W = wall.now  # the wall clock at the checkpoint
    state = checkpoint_after_reading(tmp_path, range(100), wall)
    log = tmp_path / "app.log"
    # Down: A (followed) grows and is rotated and compressed; B is created, rotated and compressed;
    # C is the live file at the restart.
    append(log, lines(range(100, 120), 20))
    gz(tmp_path / "app.log.3.gz", log.read_bytes(), W + 2)
    log.unlink()
    gz(tmp_path / "app.log.2.gz", lines(range(200, 300), 20), W + 4)
    (tmp_path / "app.log.1").write_bytes(lines(range(300, 310)))
    log.write_bytes(lines(range(400, 405)))

    wall.now = W + 10
    t = tailer(tmp_path, wall)
    warnings = t.restore(state)
    assert any("app.log.2.gz: compressed after the checkpoint" in w for w in warnings), warnings
    events = t.poll()
    got = ids_of(events)
    assert sorted(got) == sorted(f"r{i}" for i in [*range(100, 120), *range(200, 300), *range(300, 310),
                                                    *range(400, 405)])
    assert got[:120] == [f"r{i}" for i in [*range(100, 120), *range(200, 300)]]  # oldest first
    b = [ev for ev in events if ev.path.endswith("app.log.2.gz")]
    assert b[0].offset == 0
    assert t.poll() == []
    assert sum(t.stats().bytes_lost.values()) == 0
    after = roundtrip(t.state())
    assert not any(e.get("compressed") for e in after["files"])
    t.close()

    # A second restart reads none of it again: by the retired head, and by mtime.
    wall.now = W + 20
    t2 = tailer(tmp_path, wall)
    assert t2.restore(after) == []
    append(log, lines(range(405, 407)))
    assert ids_of(t2.poll()) == ["r405", "r406"]
    later = roundtrip(t2.state())
    t2.close()

    # Even from a checkpoint whose retired list lost it, an mtime before saved_at excludes it.
    later["retired"] = []
    t3 = tailer(tmp_path, wall)
    t3.restore(later)
    assert t3.poll() == []
    t3.close()


def test_crash_while_reading_it_resumes_inside_it(tmp_path: Path) -> None:
    wall = Wall()
    W = wall.now  # the wall clock at the checkpoint
    log = tmp_path / "app.log"
    oracle = Oracle([str(tmp_path / "app.log*")], use_watchdog=False, wall_clock=wall)
    append(log, lines(range(50), 20))
    oracle.poll()
    oracle.checkpoint()
    gz(tmp_path / "app.log.2.gz", lines(range(1000, 1300), 30), W + 3)  # while down
    wall.now = W + 10
    oracle.crash()
    oracle.poll(max_lines=100)  # part of the unseen file
    oracle.checkpoint()
    saved = oracle.saved_state
    assert saved is not None and [e for e in saved["files"] if e.get("compressed")], saved
    oracle.poll(max_lines=40)
    oracle.crash()  # the 40 are read again from the checkpointed offset, not from 0
    oracle.drain()
    oracle.assert_exactly(expect_ids([*range(50), *range(1000, 1300)]))
    oracle.checkpoint()
    oracle.crash()
    oracle.drain()
    oracle.assert_exactly(expect_ids([*range(50), *range(1000, 1300)]))
    oracle.close()


def test_gz_older_than_the_checkpoint_is_not_read(tmp_path: Path) -> None:
    wall = Wall()
    W = wall.now  # the wall clock at the checkpoint
    state = checkpoint_after_reading(tmp_path, range(10), wall)
    gz(tmp_path / "app.log.2.gz", lines(range(500, 550)), W - 1)
    gz(tmp_path / "app.log.3.gz", lines(range(600, 650)), W)  # not later than saved_at
    wall.now = W + 10
    t = tailer(tmp_path, wall)
    assert t.restore(state) == []
    assert t.poll() == []
    t.close()


def test_gz_whose_head_matches_a_retired_entry_is_not_read(tmp_path: Path) -> None:
    wall = Wall()
    W = wall.now  # the wall clock at the checkpoint
    log = tmp_path / "app.log"
    append(log, lines(range(60), 20))
    old = log.read_bytes()
    t = tailer(tmp_path, wall)
    assert len(t.poll()) == 60
    with open(log, "r+b") as f:  # copytruncate: the old position is retired
        f.truncate(0)
    append(log, lines(range(700, 705), 20))
    assert ids_of(t.poll()) == [f"r{i}" for i in range(700, 705)]
    state = roundtrip(t.state())
    t.close()
    assert state["retired"]
    gz(tmp_path / "app.log.1.gz", old + lines(range(60, 65), 20), W + 5)  # the copy, compressed while down
    wall.now = W + 10
    t2 = tailer(tmp_path, wall)
    assert t2.restore(state) == []
    assert t2.poll() == []
    t2.close()


def test_gz_whose_head_matches_a_followed_file_is_not_read(tmp_path: Path) -> None:
    wall = Wall()
    W = wall.now  # the wall clock at the checkpoint
    state = checkpoint_after_reading(tmp_path, range(30), wall)
    log = tmp_path / "app.log"
    gz(tmp_path / "app.log.1.gz", log.read_bytes(), W + 5)  # a compressed copy of the live file
    append(log, lines(range(30, 32), 20))
    wall.now = W + 10
    t = tailer(tmp_path, wall)
    assert t.restore(state) == []
    assert ids_of(t.poll()) == ["r30", "r31"]
    t.close()


def test_state_without_saved_at_skips_the_rule(tmp_path: Path) -> None:
    wall = Wall()
    W = wall.now  # the wall clock at the checkpoint
    state = checkpoint_after_reading(tmp_path, range(10), wall)
    del state["saved_at"]
    gz(tmp_path / "app.log.2.gz", lines(range(500, 550)), W + 5)
    wall.now = W + 10
    t = tailer(tmp_path, wall)
    assert t.restore(state) == []
    assert t.poll() == []
    t.close()


def test_never_while_polling_and_only_in_the_globs(tmp_path: Path) -> None:
    wall = Wall()
    W = wall.now  # the wall clock at the checkpoint
    state = checkpoint_after_reading(tmp_path, range(10), wall)
    gz(tmp_path / "other.log.1.gz", lines(range(800, 810)), W + 5)  # newer, but not matched
    wall.now = W + 10
    t = tailer(tmp_path, wall)
    assert t.restore(state) == []
    assert t.poll() == []
    gz(tmp_path / "app.log.1.gz", lines(range(900, 910)), W + 20)  # appears while running
    wall.now = W + 30
    assert t.poll() == []
    t.close()


def test_bounded_newest_first_and_xz(tmp_path: Path) -> None:
    wall = Wall()
    W = wall.now  # the wall clock at the checkpoint
    state = checkpoint_after_reading(tmp_path, range(5), wall)
    n = MAX_UNSEEN + 2
    for i in range(n):  # i = 0 oldest
        p = tmp_path / f"app.log.{n - i}.xz"
        p.write_bytes(lzma.compress(lines(range(1000 * (i + 1), 1000 * (i + 1) + 3))))
        os.utime(p, (W + 1 + i, W + 1 + i))
    wall.now = W + 100
    t = tailer(tmp_path, wall)
    t.restore(state)
    got = ids_of(t.poll())
    kept = range(n - MAX_UNSEEN, n)  # the newest MAX_UNSEEN, read oldest first
    assert got == [f"r{1000 * (i + 1) + j}" for i in kept for j in range(3)]
    t.close()
