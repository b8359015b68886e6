"""Issue 13: a file rotated AND compressed while the sidecar was down is finished from its .gz/.xz/.bz2.

Driven by hand: write, poll part of it, checkpoint, then (the sidecar "down") rename the file,
compress it, unlink the plain copy and start a new app.log; restore into a new tailer and poll.
The rest of the old file must come out exactly once, from the compressed file, and the
compressed file must never be read otherwise.
"""

from __future__ import annotations

import bz2
import gzip
import itertools
import json
import lzma
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from exporter.sources.tail import Tailer
from tests.support.tail import Oracle, append, expect_ids, ids_of, lines

COMPRESSORS: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    "gzip": (".gz", gzip.compress),
    "xz": (".xz", lzma.compress),
    "bzip2": (".bz2", bz2.compress),
}


def compress_away(src: Path, dst: Path, compress: Callable[[bytes], bytes]) -> None:
    """What logrotate's compress does: write the compressed copy, then remove the plain file."""
    dst.write_bytes(compress(src.read_bytes()))
    src.unlink()


def roundtrip(state: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(json.dumps(state))
    return loaded


def checkpointed(tmp_path: Path, pattern: str, total: int, read: int) -> tuple[Path, dict[str, Any], list[str]]:
    """app.log with lines 0..total-1 of which the first `read` were returned and checkpointed."""
    log = tmp_path / "app.log"
    log.write_bytes(lines(range(total), 20))
    t = Tailer([str(tmp_path / pattern)], use_watchdog=False)
    got = ids_of(t.poll(max_lines=read))
    state = roundtrip(t.state())
    t.close()
    return log, state, got


@pytest.mark.parametrize("fmt", sorted(COMPRESSORS))
@pytest.mark.parametrize("pattern", ["app.log*", "app.log"])
def test_rest_read_from_compressed_successor_once(tmp_path: Path, fmt: str, pattern: str) -> None:
    ext, compress = COMPRESSORS[fmt]
    log, state, got = checkpointed(tmp_path, pattern, 300, 120)
    assert got == [f"r{i}" for i in range(120)]
    append(log, lines(range(300, 350), 20))  # written while the sidecar was down, before rotation
    os.rename(log, tmp_path / "app.log.1")
    compress_away(tmp_path / "app.log.1", tmp_path / f"app.log.1{ext}", compress)
    log.write_bytes(lines(range(1000, 1010)))  # the new app.log

    t = Tailer([str(tmp_path / pattern)], use_watchdog=False)
    warnings = t.restore(state)
    assert any("compressed while stopped" in w for w in warnings), warnings
    events = t.poll()
    rest = [ev for ev in events if ev.path.endswith(ext)]
    assert ids_of(rest) == [f"r{i}" for i in [*range(120, 300), *range(300, 350)]]
    assert rest[0].offset == state["files"][0]["offset"]  # offsets in the decompressed data
    assert all(a.end == b.offset for a, b in itertools.pairwise(rest))
    assert ids_of(events[len(rest) :]) == [f"r{i}" for i in range(1000, 1010)]
    assert ids_of(events[: len(rest)]) == ids_of(rest)  # the older file first
    assert t.poll() == []
    assert t.stats().bytes_lost.get("gone_while_stopped", 0) == 0
    assert t.stats().bytes_behind == 0
    after = roundtrip(t.state())
    assert not any(e.get("compressed") for e in after["files"])
    t.close()

    # Restarted from a checkpoint taken after the recovery: the compressed file is not read again.
    t2 = Tailer([str(tmp_path / pattern)], use_watchdog=False)
    t2.restore(after)
    append(log, lines(range(1010, 1012)))
    assert ids_of(t2.poll()) == ["r1010", "r1011"]
    t2.close()


def test_identity_changed_inode_reused_recovers_from_gz(tmp_path: Path) -> None:
    """The saved inode now holds another file (here: rewritten in place); the .gz holds ours."""
    log, state, _ = checkpointed(tmp_path, "app.log*", 200, 50)
    original = log.read_bytes()
    (tmp_path / "app.log.2.gz").write_bytes(gzip.compress(original))
    with open(log, "r+b") as f:  # same inode, other content: what a reused inode looks like
        f.truncate(0)
        f.write(lines(range(5000, 5003)))
    t = Tailer([str(tmp_path / "app.log*")], use_watchdog=False)
    warnings = t.restore(state)
    assert any("compressed while stopped" in w for w in warnings), warnings
    got = ids_of(t.poll())
    assert got == [f"r{i}" for i in [*range(50, 200), *range(5000, 5003)]]
    assert sum(t.stats().bytes_lost.values()) == 0
    t.close()


def test_checkpoint_during_recovery_resumes_in_the_compressed_file(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    oracle = Oracle([str(tmp_path / "app.log*")], use_watchdog=False)
    append(log, lines(range(400), 30))
    oracle.poll(max_lines=100)
    oracle.checkpoint()
    os.rename(log, tmp_path / "app.log.1")
    compress_away(tmp_path / "app.log.1", tmp_path / "app.log.2.gz", gzip.compress)
    append(log, lines(range(400, 420)))
    oracle.crash()
    oracle.poll(max_lines=50)  # part of the rest, from the .gz
    oracle.checkpoint()
    saved = oracle.saved_state
    assert saved is not None
    assert [e for e in saved["files"] if e.get("compressed")], saved["files"]
    oracle.poll(max_lines=30)
    oracle.crash()  # loses the 30: read again from the .gz at the checkpointed offset
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(420)))
    assert oracle.tailer.stats().bytes_lost.get("gone_while_stopped", 0) == 0
    oracle.checkpoint()
    oracle.crash()
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(420)))
    oracle.close()


def test_candidate_with_other_head_is_not_read(tmp_path: Path) -> None:
    log, state, _ = checkpointed(tmp_path, "app.log*", 100, 10)
    size = log.stat().st_size
    (tmp_path / "other.log.1.gz").write_bytes(gzip.compress(lines(range(7000, 7100), 20)))
    log.unlink()
    t = Tailer([str(tmp_path / "app.log*")], use_watchdog=False)
    warnings = t.restore(state)
    assert any("gone while stopped" in w for w in warnings), warnings
    assert t.poll() == []
    assert t.stats().bytes_lost["gone_while_stopped"] == size - state["files"][0]["offset"]
    t.close()


def test_same_head_other_content_is_not_read(tmp_path: Path) -> None:
    """Same first lines, different bytes before the offset: not our file."""
    log, state, _ = checkpointed(tmp_path, "app.log*", 100, 40)
    cut = state["files"][0]["offset"] - 100  # same head, other bytes before the offset
    other = log.read_bytes()[:cut] + lines(range(8000, 8100), 20)
    assert other[:256] == log.read_bytes()[:256]
    log.unlink()
    (tmp_path / "app.log.1.gz").write_bytes(gzip.compress(other))
    t = Tailer([str(tmp_path / "app.log*")], use_watchdog=False)
    t.restore(state)
    assert t.poll() == []
    assert t.stats().bytes_lost["gone_while_stopped"] > 0
    t.close()


def test_compressed_file_without_saved_counterpart_is_never_read(tmp_path: Path) -> None:
    (tmp_path / "app.log.3.gz").write_bytes(gzip.compress(lines(range(50))))
    (tmp_path / "app.log.4.xz").write_bytes(lzma.compress(lines(range(50, 60))))
    append(tmp_path / "app.log", lines(range(100, 105)))
    t = Tailer([str(tmp_path / "app.log*")], use_watchdog=False)
    assert ids_of(t.poll()) == [f"r{i}" for i in range(100, 105)]
    state = roundtrip(t.state())
    t.close()
    t2 = Tailer([str(tmp_path / "app.log*")], use_watchdog=False)
    assert t2.restore(state) == []
    assert t2.poll() == []
    t2.close()


def test_old_compressed_file_outside_mtime_bound_is_not_read(tmp_path: Path) -> None:
    log, state, _ = checkpointed(tmp_path, "app.log*", 100, 10)
    gz = tmp_path / "app.log.1.gz"
    compress_away(log, gz, gzip.compress)
    saved_mtime = state["files"][0]["mtime"]
    os.utime(gz, (saved_mtime - 3600, saved_mtime - 3600))  # older than the file we followed: not it
    t = Tailer([str(tmp_path / "app.log*")], use_watchdog=False)
    t.restore(state)
    assert t.poll() == []
    assert t.stats().bytes_lost["gone_while_stopped"] > 0
    t.close()


def test_gz_truncated_before_the_offset_is_lost_not_a_crash(tmp_path: Path) -> None:
    log, state, _ = checkpointed(tmp_path, "app.log*", 2000, 1900)
    data = gzip.compress(log.read_bytes())
    log.unlink()
    (tmp_path / "app.log.1.gz").write_bytes(data[: len(data) // 3])
    t = Tailer([str(tmp_path / "app.log*")], use_watchdog=False)
    t.restore(state)
    assert t.poll() == []
    entry = state["files"][0]
    assert t.stats().bytes_lost["gone_while_stopped"] == entry["size"] - entry["offset"]
    t.close()


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_gz_damaged_after_the_offset_reads_what_it_can(tmp_path: Path, damage: str) -> None:
    total = 20000  # enough compressed data that the damage lies well after the offset
    log = tmp_path / "app.log"
    rng = random.Random(13)
    body = b"".join(
        b'{"request_id":"r%d","model":"m","ts":1764470000,"pad":"%s"}\n'
        % (i, bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(40)))
        for i in range(total)
    )
    log.write_bytes(body)
    t = Tailer([str(tmp_path / "app.log*")], use_watchdog=False)
    t.poll(max_lines=100)
    state = roundtrip(t.state())
    t.close()
    data = gzip.compress(body)
    if damage == "truncated":
        data = data[: len(data) * 2 // 3]
    else:
        mid = len(data) * 2 // 3
        data = data[:mid] + bytes(b ^ 0xFF for b in data[mid : mid + 64]) + data[mid + 64 :]
    log.unlink()
    (tmp_path / "app.log.1.gz").write_bytes(data)
    t2 = Tailer([str(tmp_path / "app.log*")], use_watchdog=False)
    t2.restore(state)
    got = ids_of(t2.poll())
    assert got, "the undamaged part after the offset is read"
    assert got == [f"r{i}" for i in range(100, 100 + len(got))]
    assert 100 + len(got) < total
    lost = t2.stats().bytes_lost["gone_while_stopped"]
    read_to = state["files"][0]["offset"] + sum(len(ln) for ln in body.splitlines(keepends=True)[100 : 100 + len(got)])
    assert lost == len(body) - read_to
    assert t2.poll() == []
    assert t2.stats().bytes_behind == 0
    t2.close()


def test_unterminated_last_line_in_compressed_file_is_counted_not_returned(tmp_path: Path) -> None:
    log, state, _ = checkpointed(tmp_path, "app.log", 50, 20)
    append(log, b'{"request_id":"r999"')  # never got its newline
    compress_away(log, tmp_path / "app.log.1.gz", gzip.compress)
    t = Tailer([str(tmp_path / "app.log")], use_watchdog=False)
    t.restore(state)
    assert ids_of(t.poll()) == [f"r{i}" for i in range(20, 50)]
    assert t.stats().bytes_lost["unterminated"] == len(b'{"request_id":"r999"')
    assert t.stats().bytes_lost.get("gone_while_stopped", 0) == 0
    t.close()


def test_long_line_across_the_offset_is_still_skipped_in_the_compressed_rest(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(lines(range(5)) + b"x" * 3000 + b"\n" + lines(range(5, 10)))
    t = Tailer([str(log)], use_watchdog=False, max_line_bytes=1000)
    t.poll(max_lines=6)  # five lines and the line_too_long report; the state is inside the long line
    state = roundtrip(t.state())
    t.close()
    compress_away(log, tmp_path / "app.log.1.gz", gzip.compress)
    t2 = Tailer([str(log)], use_watchdog=False, max_line_bytes=1000)
    t2.restore(state)
    events = t2.poll()
    assert [ev.skipped for ev in events] == [None] * 5
    assert ids_of(events) == [f"r{i}" for i in range(5, 10)]
    t2.close()


@pytest.mark.parametrize("fmt", sorted(COMPRESSORS))
def test_read_to_its_end_at_the_checkpoint_then_grew_then_compressed(tmp_path: Path, fmt: str) -> None:
    """The fault-suite case: killed with the live file read to its end; the writer went on."""
    ext, compress = COMPRESSORS[fmt]
    log, state, got = checkpointed(tmp_path, "app.log*", 100, 1000)
    assert len(got) == 100 and state["files"][0]["size"] == state["files"][0]["offset"]
    append(log, lines(range(100, 180), 20))  # after the kill, before the rotation
    os.rename(log, tmp_path / "app.log.1")
    log.write_bytes(lines(range(180, 190)))
    compress_away(tmp_path / "app.log.1", tmp_path / f"app.log.2{ext}", compress)
    t = Tailer([str(tmp_path / "app.log*")], use_watchdog=False)
    t.restore(state)
    assert ids_of(t.poll()) == [f"r{i}" for i in range(100, 190)]
    assert sum(t.stats().bytes_lost.values()) == 0
    t.close()


@pytest.mark.parametrize("fmt", sorted(COMPRESSORS))
def test_read_to_its_end_and_compressed_unchanged_reads_nothing(tmp_path: Path, fmt: str) -> None:
    ext, compress = COMPRESSORS[fmt]
    log, state, _ = checkpointed(tmp_path, "app.log*", 100, 1000)
    compress_away(log, tmp_path / f"app.log.1{ext}", compress)
    t = Tailer([str(tmp_path / "app.log*")], use_watchdog=False)
    t.restore(state)
    assert t.poll() == []
    assert sum(t.stats().bytes_lost.values()) == 0
    assert t.stats().bytes_behind == 0
    t.close()
