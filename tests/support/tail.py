"""Shared helpers for the tailer tests (no tests here).

The oracle models the sidecar: lines are "consumed" when poll() returns them,
a checkpoint saves state() together with what was consumed, and a crash
throws away everything consumed after the last checkpoint, then restores the
saved state into a NEW tailer. Every request id must end up consumed exactly
once.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from exporter.sources.tail import Tailer, TailEvent

_ID = re.compile(rb'"request_id":"(r\d+)"')


def line(i: int, pad: int = 0) -> bytes:
    """One JSON line with a unique request id (padding varies the length)."""
    return b'{"request_id":"r%d","model":"m","ts":1764470000,"pad":"%s"}\n' % (i, b"x" * pad)


def lines(ids: range | Sequence[int], pad: int = 0) -> bytes:
    return b"".join(line(i, pad) for i in ids)


def ids_of(events: Sequence[TailEvent]) -> list[str]:
    out = []
    for ev in events:
        if ev.skipped is None:
            m = _ID.search(ev.line)
            assert m is not None, ev
            out.append(m.group(1).decode())
    return out


def expect_ids(ids: range | Sequence[int]) -> Counter[str]:
    return Counter(f"r{i}" for i in ids)


class FakeClock:
    """Injected clock: tests move time by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Oracle:
    """Consumes events, checkpoints and crashes like the sidecar would."""

    def __init__(self, patterns: Sequence[str], **kwargs: Any) -> None:
        self.patterns = list(patterns)
        self.kwargs = kwargs
        self.tailer = Tailer(self.patterns, **kwargs)
        self.consumed: list[str] = []
        self.skipped: list[str] = []
        self.saved_state: dict[str, Any] | None = None
        self.saved_consumed: list[str] = []
        self.saved_skipped: list[str] = []
        self.warnings: list[str] = []
        self.restarts = 0

    def poll(self, max_lines: int | None = None) -> list[TailEvent]:
        events = self.tailer.poll(max_lines)
        self.consumed.extend(ids_of(events))
        self.skipped.extend(ev.skipped for ev in events if ev.skipped is not None)
        return events

    def checkpoint(self) -> None:
        # Round-trip through JSON: the checkpoint is a file on disk.
        self.saved_state = json.loads(json.dumps(self.tailer.state()))
        self.saved_consumed = list(self.consumed)
        self.saved_skipped = list(self.skipped)

    def crash(self) -> list[str]:
        """Drop the tailer and what it returned since the checkpoint; restore a new one."""
        self.tailer.close()
        self.consumed = list(self.saved_consumed)
        self.skipped = list(self.saved_skipped)
        self.tailer = Tailer(self.patterns, **self.kwargs)
        self.restarts += 1
        if self.saved_state is None:
            return []
        warnings = self.tailer.restore(self.saved_state)
        self.warnings.extend(warnings)
        return warnings

    def drain(self, until: Callable[[], bool] | None = None, timeout: float = 10.0) -> None:
        """Poll until nothing new arrives (or until() holds), with a deadline, no sleeps."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.poll()
            if until is not None:
                if until():
                    return
            elif not got:
                return
        raise AssertionError(f"drain timed out; consumed {len(self.consumed)}")

    def assert_exactly(self, expected: Counter[str]) -> None:
        got = Counter(self.consumed)
        dupes = {k: v for k, v in got.items() if v > 1}
        missing = expected - got
        extra = got - expected
        assert not dupes, f"read twice: {sorted(dupes)[:10]} ({len(dupes)})"
        assert not missing, f"missing: {sorted(missing)[:10]} ({len(missing)})"
        assert not extra, f"unexpected: {sorted(extra)[:10]} ({len(extra)})"

    def close(self) -> None:
        self.tailer.close()


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def copytruncate(src: Path, dst: Path) -> None:
    """What logrotate's copytruncate does: copy the content, then truncate in place."""
    with open(src, "rb") as f:
        data = f.read()
    with open(dst, "wb") as f:
        f.write(data)
    os.truncate(src, 0)
