"""The copytruncate re-read (issue 13 item 3), driven through ``Tailer.poll()`` by hand.

The flaky ``test_copytruncate_counts_every_line_once[copy-elsewhere]`` read 16 lines twice:
the gateway's copytruncate and its next batch landed between the tailer's truncation
checks (size, head, the bytes before the offset: all still the old file's) and its read.
The read at the old offset then returned the *new* content's end (16 whole lines, as the
old offset fell on one of the new content's line boundaries), the next poll saw the new
head, took it for a truncation and read the new content again from 0. Here the same
interleaving is forced: the copy and the new batch happen inside the tailer's data read.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from exporter.sources.tail.tailer import _CHUNK
from tests.support.tail import Oracle, append, copytruncate, expect_ids, lines


@pytest.mark.parametrize("copy_inside_globs", [False, True], ids=["copy-elsewhere", "copy-in-globs"])
@pytest.mark.parametrize("new_batch", [60, 45], ids=["aligned", "mid-line"])
def test_copytruncate_between_the_checks_and_the_read_reads_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, copy_inside_globs: bool, new_batch: int
) -> None:
    log = tmp_path / "app.log"
    append(log, lines(range(100, 130)))  # ids of one width: equal lines, so offsets can align
    oracle = Oracle([str(tmp_path / "app.log*")], use_watchdog=False, copy_settle=0.0)
    oracle.poll()
    offset = log.stat().st_size
    target = tmp_path / ("app.log.1" if copy_inside_globs else "archive.1")
    real_pread = os.pread
    fired = []

    def racing_pread(fd: int, n: int, pos: int) -> bytes:
        # The tailer's data read at the old offset: logrotate and the gateway win the race.
        if not fired and n == _CHUNK and pos == offset:
            fired.append(pos)
            copytruncate(log, target)
            append(log, lines(range(200, 200 + new_batch)))
        return real_pread(fd, n, pos)

    monkeypatch.setattr(os, "pread", racing_pread)
    oracle.poll()
    monkeypatch.setattr(os, "pread", real_pread)
    assert fired, "the racing read did not happen"
    oracle.drain()
    oracle.assert_exactly(expect_ids([*range(100, 130), *range(200, 200 + new_batch)]))
    assert oracle.skipped == []
    assert oracle.tailer.stats().truncations == 1
    oracle.close()
