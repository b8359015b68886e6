"""Lines over max_line_bytes: skipped once, bounded memory, tailing resumes after them."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from exporter.sources.tail import Tailer
from tests.support.tail import Oracle, append, expect_ids, lines


def test_line_over_cap_is_a_skipped_event(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    cap = 200
    append(log, lines(range(2)) + b"y" * (cap + 1) + b"\n" + b"z" * cap + b"\n" + lines([2]))
    with Tailer([str(log)], use_watchdog=False, max_line_bytes=cap) as t:
        events = t.poll()
    assert [e.skipped for e in events] == [None, None, "line_too_long", None, None]
    assert events[3].line == b"z" * cap  # exactly at the cap is fine
    assert t.stats().skipped["line_too_long"] == 1


def test_huge_line_uses_bounded_memory(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    with open(log, "wb") as f:
        f.write(lines(range(3)))
        for _ in range(32):
            f.write(b"x" * (1 << 20))  # a 32 MiB line
        f.write(b"\n")
        f.write(lines(range(3, 6)))
    with Tailer([str(log)], use_watchdog=False, max_line_bytes=64 << 10) as t:
        tracemalloc.start()
        events = t.poll()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert [e.skipped for e in events] == [None] * 3 + ["line_too_long"] + [None] * 3
    assert peak < 8 << 20, peak  # a few read chunks, never the whole line


def test_long_line_arriving_in_pieces_and_across_a_restart(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    cap = 1000
    append(log, lines(range(5)))
    oracle = Oracle([str(log)], use_watchdog=False, max_line_bytes=cap)
    oracle.poll()
    append(log, b'{"request_id":"long","x":"' + b"x" * 600)
    assert oracle.poll() == []  # not too long yet, and no newline
    append(log, b"x" * 600)
    (ev,) = oracle.poll()
    assert ev.skipped == "line_too_long"
    oracle.checkpoint()  # inside the long line
    assert oracle.saved_state is not None
    assert oracle.saved_state["files"][0]["skipping"] is True
    oracle.crash()
    append(log, b"x" * 5000 + b'"}\n' + lines(range(5, 10)))
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(10)))
    assert oracle.skipped == ["line_too_long"]  # reported once, not again after restart
    oracle.close()
