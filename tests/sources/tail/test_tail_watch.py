"""wait(): woken by file events (watchdog), bounded by poll_interval without them."""

from __future__ import annotations

import time
from pathlib import Path

from exporter.sources.tail import Tailer
from tests.support.tail import append, lines


def test_wait_returns_on_a_file_event(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.touch()
    with Tailer([str(tmp_path / "*.log")], use_watchdog=True, poll_interval=30) as t:
        t.wait(0)  # starts the watcher
        t.poll()
        append(log, lines(range(3)))
        started = time.monotonic()
        t.wait(30)
        assert time.monotonic() - started < 10  # woken by inotify, not the 30 s timeout
        assert len(t.poll()) == 3


def test_new_file_in_a_directory_created_later(tmp_path: Path) -> None:
    sub = tmp_path / "later"
    with Tailer([str(sub / "*.log")], use_watchdog=True, poll_interval=0.05) as t:
        t.wait(0)  # the directory does not exist yet: polling fallback
        assert t.poll() == []
        sub.mkdir()
        append(sub / "a.log", lines(range(4)))
        t.wait(0.01)
        assert len(t.poll()) == 4


def test_polling_only_wait_is_bounded_by_poll_interval(tmp_path: Path) -> None:
    with Tailer([str(tmp_path / "*.log")], use_watchdog=False, poll_interval=0.05) as t:
        started = time.monotonic()
        t.wait(30)
        assert time.monotonic() - started < 5


def test_stats_report_lag_and_counts(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    append(log, lines(range(10)))
    now = [5.0]
    with Tailer([str(log)], use_watchdog=False, clock=lambda: now[0], source_name="gateway") as t:
        t.poll(max_lines=4)
        st = t.stats()
        assert st.source == "gateway"
        assert st.lines_read == 4
        assert st.bytes_read == log.stat().st_size
        assert st.bytes_behind == log.stat().st_size - len(lines(range(4)))
        assert st.last_event_time == 5.0
        now[0] = 6.0
        t.poll()
        assert t.stats().bytes_behind == 0
        assert t.stats().last_event_time == 6.0
