"""Bytes known lost (issue 13 item 1): counted by reason, persisted in the tail state.

A file read to its end that disappears is normal rotation: no warning, nothing lost.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from exporter.sources.tail import Tailer
from tests.support.tail import Oracle, append, lines


def test_gone_while_stopped_with_unread_bytes_is_counted_and_persisted(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    append(log, lines(range(10)))
    oracle = Oracle([str(tmp_path / "*.log")], use_watchdog=False)
    oracle.poll(max_lines=3)  # the rest is read (buffered) but not returned: unread
    oracle.checkpoint()
    offset = oracle.saved_state["files"][0]["offset"]  # type: ignore[index]
    unread = log.stat().st_size - offset
    assert unread > 0
    os.unlink(log)
    warnings = oracle.crash()
    assert len(warnings) == 1 and "gone while stopped; its unread bytes are lost" in warnings[0]
    assert oracle.tailer.stats().bytes_lost["gone_while_stopped"] == unread
    oracle.checkpoint()  # the counter travels in the state...
    assert oracle.crash() == []
    assert oracle.tailer.stats().bytes_lost["gone_while_stopped"] == unread  # ...across restarts
    oracle.close()


def test_truncated_with_unread_bytes_is_counted(tmp_path: Path) -> None:
    """Lines already read into the buffer are still returned; what was never read is lost."""
    log = tmp_path / "app.log"
    append(log, lines(range(1000, 2000), pad=2000))  # ~2 MB of equal lines: more than one read chunk
    width = len(lines([1000], pad=2000))
    oracle = Oracle([str(log)], use_watchdog=False)
    oracle.poll(max_lines=4)  # one chunk read, four lines returned
    size = log.stat().st_size
    os.truncate(log, 0)
    append(log, lines(range(100, 103)))
    oracle.drain()
    in_first_chunk = (1 << 20) // width
    assert oracle.consumed == [f"r{i}" for i in [*range(1000, 1000 + in_first_chunk), 100, 101, 102]]
    assert oracle.tailer.stats().bytes_lost["truncated_unread"] == size - in_first_chunk * width
    oracle.close()


def test_truncated_after_being_read_to_its_end_loses_nothing(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    append(log, lines(range(10)))
    oracle = Oracle([str(log)], use_watchdog=False)
    oracle.drain()
    os.truncate(log, 0)
    append(log, lines(range(100, 103)))
    oracle.drain()
    assert sum(oracle.tailer.stats().bytes_lost.values()) == 0
    oracle.close()


def test_deleted_before_it_could_be_opened_is_counted(tmp_path: Path) -> None:
    busy, late = tmp_path / "a.log", tmp_path / "b.log"
    append(busy, lines(range(50)))
    tailer = Tailer([str(tmp_path / "*.log")], use_watchdog=False, max_open_files=1)
    assert len(tailer.poll(max_lines=5)) == 5  # a.log holds the one descriptor, not at its end
    append(late, lines(range(100, 110)))
    tailer.poll(max_lines=5)  # b.log: no descriptor to spare, deferred
    assert tailer.stats().open_files == 1
    size = late.stat().st_size
    os.unlink(late)
    tailer.poll(max_lines=5)
    assert tailer.stats().bytes_lost["deleted_unread"] == size
    state = json.loads(json.dumps(tailer.state()))
    assert state["lost"] == {"deleted_unread": size}
    tailer.close()
