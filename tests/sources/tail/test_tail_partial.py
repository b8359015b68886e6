"""Partial lines: never returned before their newline, not even across a restart."""

from __future__ import annotations

from pathlib import Path

from exporter.sources.tail import Tailer
from tests.support.tail import Oracle, append, expect_ids, lines

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tail"


def test_partial_line_completed_after_a_pause(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    data = lines(range(3))
    append(log, data[:-10])
    with Tailer([str(log)], use_watchdog=False) as t:
        first = t.poll()
        assert [e.line for e in first] == data.split(b"\n")[:2]
        offset = t.state()["files"][0]["offset"]
        assert offset == first[-1].end  # stays before the partial line
        for _ in range(3):
            assert t.poll() == []
        assert t.stats().files[0].bytes_behind == len(data) - 10 - offset
        append(log, data[-10:])
        (last,) = t.poll()
        assert last.line + b"\n" == data[offset:]
        assert last.offset == offset
        assert last.end == len(data)


def test_partial_line_across_a_restart(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    data = lines(range(5))
    cut = len(lines(range(3))) + 7
    append(log, data[:cut])
    oracle = Oracle([str(log)], use_watchdog=False)
    oracle.poll()
    oracle.checkpoint()
    assert oracle.saved_state is not None
    assert oracle.saved_state["files"][0]["offset"] == len(lines(range(3)))
    oracle.crash()
    assert oracle.poll() == []  # still unterminated
    append(log, data[cut:])
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(5)))
    oracle.close()


def test_crlf_and_no_trailing_newline_fixture(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes((FIXTURES / "crlf_no_trailing_newline.jsonl").read_bytes())
    with Tailer([str(log)], use_watchdog=False) as t:
        events = t.poll()
        assert [e.line for e in events] == [
            b'{"request_id":"r0"}',
            b'{"request_id":"r1"}',
            b'{"request_id":"r2"}',
        ]  # CR stripped, blank line dropped, unterminated r3 held back
        assert t.stats().blank_lines == 1
        append(log, b"\r\n")
        (ev,) = t.poll()
        assert ev.line == b'{"request_id":"r3"}'
        assert t.stats().files[0].bytes_behind == 0


def test_file_without_trailing_newline_is_never_returned_whole(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b'{"request_id":"r0"}')
    with Tailer([str(log)], use_watchdog=False) as t:
        assert t.poll() == []
        assert t.state()["files"][0]["offset"] == 0
        assert t.stats().files[0].bytes_behind == len(b'{"request_id":"r0"}')


def test_max_lines_keeps_the_state_exact(tmp_path: Path) -> None:
    """A budget stops mid-buffer: the state covers exactly the lines returned."""
    log = tmp_path / "app.log"
    append(log, lines(range(100)))
    oracle = Oracle([str(log)], use_watchdog=False)
    for _ in range(3):
        assert len(oracle.poll(max_lines=7)) == 7
    oracle.checkpoint()
    assert oracle.saved_state is not None
    assert oracle.saved_state["files"][0]["offset"] == len(lines(range(21)))
    oracle.poll(max_lines=50)  # lost with the crash
    oracle.crash()
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(100)))
    assert oracle.poll(max_lines=0) == []
    oracle.close()
