"""``poll_batches``: a read's lines as one batch, with the edges batching creates.

A line split across two reads, a read ending on ``\\r``, a budget cutting a chunk, a
rotation in the middle of a batch, a restore from a state taken between two batches; and
a property: any stream (CR, NUL, blank and long lines), any split into writes, any budgets,
the batches are exactly the lines the per-line rules (``normalise_line``) give, at their
byte offsets, and a plain batch is exactly its bytes.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.sources.tail import TailBatch, Tailer, TailEvent, normalise_line

CAP = 40


def _events(batches: list[TailBatch]) -> list[TailEvent]:
    return [event for batch in batches for event in batch.events()]


def _lines(batches: list[TailBatch]) -> list[bytes]:
    return [line for batch in batches for line in batch.lines]


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def test_a_line_split_across_two_reads_is_held_then_whole(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b'{"a":1}\n{"b":2}\n{"c":')
    tailer = Tailer([str(path)], use_watchdog=False)
    first = tailer.poll_batches()
    assert [(b.lines, b.offset, b.end, b.starts) for b in first] == [([b'{"a":1}', b'{"b":2}'], 0, 16, None)]
    state = tailer.state()
    assert state["files"][0]["offset"] == 16  # the partial line is not committed
    _append(path, b'3}\n{"d":4}\n')
    second = tailer.poll_batches()
    assert _lines(second) == [b'{"c":3}', b'{"d":4}']
    assert [(e.offset, e.end) for e in _events(second)] == [(16, 24), (24, 32)]
    tailer.close()
    again = Tailer([str(path)], use_watchdog=False)  # a restart between the two reads
    again.restore(state)
    assert _lines(again.poll_batches()) == [b'{"c":3}', b'{"d":4}']
    again.close()


def test_a_read_ending_on_cr_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b'{"a":1}\r\n{"b":2}\r')  # the read ends between \r and \n
    tailer = Tailer([str(path)], use_watchdog=False)
    first = tailer.poll_batches()
    assert _lines(first) == [b'{"a":1}']
    assert [(e.offset, e.end) for e in _events(first)] == [(0, 9)]
    assert tailer.state()["files"][0]["offset"] == 9
    _append(path, b'\n{"c":3}\n')
    second = tailer.poll_batches()
    assert _lines(second) == [b'{"b":2}', b'{"c":3}']  # the CR removed, never a line of its own
    assert [(e.offset, e.end) for e in _events(second)] == [(9, 18), (18, 26)]
    assert tailer.stats().blank_lines == 0
    tailer.close()


def test_crlf_lines_come_in_one_batch_with_their_offsets(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b'{"a":1}\r\n{"bb":2}\r\n{"c":3}\r\n')
    tailer = Tailer([str(path)], use_watchdog=False)
    batches = tailer.poll_batches()
    assert [b.lines for b in batches] == [[b'{"a":1}', b'{"bb":2}', b'{"c":3}']]  # one batch, CRs removed
    assert [(e.offset, e.end) for e in _events(batches)] == [(0, 9), (9, 19), (19, 28)]
    assert tailer.state()["files"][0]["offset"] == 28
    tailer.close()


def test_a_budget_cuts_a_chunk_and_the_state_stops_exactly_there(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    lines = [b"line-%02d" % i for i in range(10)]
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    tailer = Tailer([str(path)], use_watchdog=False)
    got = tailer.poll_batches(4)
    assert _lines(got) == lines[:4] and got[-1].end == 4 * 8
    assert tailer.state()["files"][0]["offset"] == 4 * 8
    assert _lines(tailer.poll_batches(4)) == lines[4:8]
    assert _lines(tailer.poll_batches(4)) == lines[8:]
    assert tailer.poll_batches(4) == []
    tailer.close()


def test_rotation_in_the_middle_of_a_batch_drains_the_old_file_first(tmp_path: Path) -> None:
    live = tmp_path / "app.log"
    old = [b"old-%02d" % i for i in range(10)]
    live.write_bytes(b"".join(line + b"\n" for line in old))
    tailer = Tailer([str(tmp_path / "app.log*")], use_watchdog=False)
    assert _lines(tailer.poll_batches(4)) == old[:4]
    state = tailer.state()  # a checkpoint between two slices of one chunk
    os.rename(live, tmp_path / "app.log.1")
    _append(tmp_path / "app.log.1", b"old-10\n")  # the writer finishes through its old descriptor
    live.write_bytes(b"new-00\nnew-01\n")
    rest = tailer.poll_batches()
    assert _lines(rest) == [*old[4:], b"old-10", b"new-00", b"new-01"]
    assert list(dict.fromkeys(b.path for b in rest)) == [str(tmp_path / "app.log.1"), str(live)]
    tailer.close()
    # A crash after the checkpoint, restored after the rotation: the rest exactly once, old first.
    again = Tailer([str(tmp_path / "app.log*")], use_watchdog=False)
    again.restore(state)
    assert _lines(again.poll_batches()) == [*old[4:], b"old-10", b"new-00", b"new-01"]
    again.close()


def test_an_odd_line_in_a_chunk_keeps_its_neighbours_whole(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    data = b"aaa\n\nbbb\r\n" + b"x" * (CAP + 5) + b"\nccc\0d\n\0\0eee\nfff\n"
    path.write_bytes(data)
    tailer = Tailer([str(path)], use_watchdog=False, max_line_bytes=CAP)
    events = _events(tailer.poll_batches())
    assert [(e.line, e.skipped, e.offset) for e in events] == [
        (b"aaa", None, 0),
        (b"bbb", None, 5),
        (b"", "line_too_long", 10),
        (b"", "nul_bytes", 56),
        (b"eee", None, 64),  # after the leading NUL run
        (b"fff", None, 68),
    ]
    stats = tailer.stats()
    assert (stats.blank_lines, stats.lines_read, stats.nul_bytes_skipped) == (1, 4, 2)
    tailer.close()


# --- the property ----------------------------------------------------------------------

_content = st.lists(st.sampled_from([b"a", b"b", b"\r", b"\0", b" "]), max_size=CAP + 10).map(b"".join)


def _reference(data: bytes) -> list[tuple[bytes | str, int, int | None]]:
    """Per complete line, the line rules alone: (content or skip reason, start, end or None for a skip)."""
    out: list[tuple[bytes | str, int, int | None]] = []
    start = 0
    while (nl := data.find(b"\n", start)) >= 0:
        content, reason, leading = normalise_line(data[start:nl], CAP)
        if reason is not None:
            out.append((reason, start + leading, None))
        elif content:
            out.append((content, start + leading, nl + 1))
        start = nl + 1
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(st.tuples(_content, st.booleans()), max_size=30),  # (content, CRLF?)
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12),
    budgets=st.lists(st.one_of(st.none(), st.integers(min_value=1, max_value=7)), min_size=30, max_size=30),
)
def test_batches_are_exactly_the_lines_of_the_line_rules(lines: list[tuple[bytes, bool]], cuts: list[int],
                                                         budgets: list[int | None]) -> None:
    # A plain first line (compression magic is never read); no NUL at a line's start (a NUL run
    # there is a copytruncate hole, whose own rules test_tail_nul holds) and none at the end.
    body = [b"x" + line.lstrip(b"\0") + (b"\r" if crlf else b"") for line, crlf in lines]
    data = b"start\n" + b"".join(line + b"\n" for line in body)
    bounds = sorted({min(c, len(data)) for c in cuts} | {len(data)})
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "app.log"
        path.touch()
        tailer = Tailer([str(path)], use_watchdog=False, max_line_bytes=CAP)
        got: list[tuple[bytes | str, int, int | None]] = []
        written = 0
        polls = iter(budgets)
        for bound in bounds:
            _append(path, data[written:bound])
            written = bound
            budget = next(polls, None)
            batches = tailer.poll_batches(budget)
            if budget is not None:
                assert sum(max(1, len(b.lines)) for b in batches) <= budget
            for batch in batches:
                assert batch.lines or batch.skipped is not None
                if batch.skipped is None and batch.starts is None:  # a plain batch is exactly its bytes
                    assert b"\n".join(batch.lines) + b"\n" == data[batch.offset : batch.end]
            got += [(e.skipped or e.line, e.offset, None if e.skipped else e.end) for e in _events(batches)]
        while batches := tailer.poll_batches(next(polls, None)):
            got += [(e.skipped or e.line, e.offset, None if e.skipped else e.end) for e in _events(batches)]
        tailer.close()
    assert got == _reference(data)
