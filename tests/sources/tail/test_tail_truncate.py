"""Truncation in place (``> app.log``), live and while the sidecar is stopped."""

from __future__ import annotations

from pathlib import Path

from tests.support.tail import Oracle, append, expect_ids, lines


def test_live_truncate_restarts_at_zero(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    append(log, lines(range(100)))
    oracle = Oracle([str(log)], use_watchdog=False)
    oracle.poll()
    log.write_bytes(b"")
    oracle.poll()
    append(log, lines(range(100, 110)))
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(110)))
    assert oracle.tailer.stats().truncations == 1
    oracle.close()


def test_live_truncate_and_regrow_past_offset_is_seen_by_fingerprint(tmp_path: Path) -> None:
    """Between two polls the file is emptied and refilled beyond the old offset."""
    log = tmp_path / "app.log"
    append(log, lines(range(20)))
    oracle = Oracle([str(log)], use_watchdog=False)
    oracle.poll()
    log.write_bytes(lines(range(100, 200)))
    oracle.drain()
    oracle.assert_exactly(expect_ids([*range(20), *range(100, 200)]))
    st = oracle.tailer.stats()
    assert st.truncations == 1
    assert st.fingerprint_mismatches == 1
    oracle.close()


def test_regrow_with_same_head_is_seen_by_the_bytes_before_the_offset(tmp_path: Path) -> None:
    """Same first line (same head), different bytes before the offset: still a rewrite."""
    log = tmp_path / "app.log"
    append(log, lines(range(10), pad=40))  # > fingerprint_bytes of head
    oracle = Oracle([str(log)], use_watchdog=False, fingerprint_bytes=64)
    oracle.poll()
    with open(log, "r+b") as f:  # keep line r0 (the head), rewrite everything after it
        f.truncate(len(lines([0], pad=40)))
    append(log, lines(range(50, 70), pad=40))
    oracle.drain()
    ids = oracle.consumed
    assert ids.count("r0") == 2  # the file was rewritten: its head line is read again
    assert sorted(set(ids)) == sorted({f"r{i}" for i in [*range(10), *range(50, 70)]})
    assert oracle.tailer.stats().truncations == 1
    oracle.close()


def test_truncate_and_regrow_smaller_while_stopped(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    append(log, lines(range(100)))
    oracle = Oracle([str(log)], use_watchdog=False)
    oracle.poll()
    oracle.checkpoint()
    oracle.tailer.close()
    log.write_bytes(lines(range(100, 105)))
    warnings = oracle.crash()
    assert len(warnings) == 1
    assert "app.log" in warnings[0]
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(105)))
    oracle.close()


def test_truncate_and_regrow_bigger_while_stopped(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    append(log, lines(range(10)))
    oracle = Oracle([str(log)], use_watchdog=False)
    oracle.poll()
    oracle.checkpoint()
    oracle.tailer.close()
    log.write_bytes(lines(range(100, 300)))
    warnings = oracle.crash()
    assert any("identity changed" in w for w in warnings), warnings
    oracle.drain()
    oracle.assert_exactly(expect_ids([*range(10), *range(100, 300)]))
    oracle.close()


def test_truncated_to_shorter_with_same_head_while_stopped(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    append(log, lines(range(100)))
    oracle = Oracle([str(log)], use_watchdog=False)
    oracle.poll()
    oracle.checkpoint()
    oracle.tailer.close()
    keep = len(lines(range(20)))
    with open(log, "r+b") as f:
        f.truncate(keep)  # head intact, size below the offset
    append(log, lines(range(200, 210)))
    warnings = oracle.crash()
    assert any("truncated while stopped" in w for w in warnings), warnings
    oracle.drain()
    # Read again from 0: r0..r19 twice is the honest answer for a file cut in place.
    assert oracle.consumed[100:] == [f"r{i}" for i in [*range(20), *range(200, 210)]]
    oracle.close()


def test_rewritten_with_same_head_while_stopped(tmp_path: Path) -> None:
    """Head intact and size beyond the offset, but the bytes before the offset differ."""
    log = tmp_path / "app.log"
    append(log, lines(range(10), pad=40))
    oracle = Oracle([str(log)], use_watchdog=False, fingerprint_bytes=64)
    oracle.poll()
    oracle.checkpoint()
    oracle.tailer.close()
    with open(log, "r+b") as f:
        f.truncate(len(lines([0], pad=40)))
    append(log, lines(range(50, 70), pad=40))
    warnings = oracle.crash()
    assert any("rewritten while stopped" in w for w in warnings), warnings
    oracle.drain()
    assert oracle.consumed[10:] == [f"r{i}" for i in [0, *range(50, 70)]]
    oracle.close()


def test_lines_buffered_before_a_truncation_are_still_returned(tmp_path: Path) -> None:
    """A budget left complete lines in the buffer; they were in the file, so they count."""
    log = tmp_path / "app.log"
    append(log, lines(range(100)))
    oracle = Oracle([str(log)], use_watchdog=False)
    assert len(oracle.poll(max_lines=10)) == 10
    log.write_bytes(b"")  # truncated; no copy in the globs
    append(log, lines(range(100, 105)))
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(105)))
    oracle.close()
