"""What the tailer hands out: line events, the rules for one line, counters.

:func:`normalise_line` is the single place that decides what a complete line
becomes (content, skipped, or blank); ``replay`` applies it too, so it counts
what the sidecar would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import accumulate
from typing import Literal, NamedTuple

SkipReason = Literal["line_too_long", "nul_bytes"]
SKIP_REASONS: tuple[SkipReason, ...] = ("line_too_long", "nul_bytes")
# Why bytes were lost (never read): the bounded ``reason`` label of llm_savings_source_bytes_lost_total.
LOST_REASONS: tuple[str, ...] = ("gone_while_stopped", "truncated_unread", "deleted_unread", "unterminated")


class TailEvent(NamedTuple):
    """One complete line (or one skipped line) of one file."""

    path: str
    line: bytes
    offset: int
    end: int
    skipped: SkipReason | None = None


class TailBatch(NamedTuple):
    """Complete lines of one file read together (or one skipped line): what the sidecar feeds at once.

    One batch per read instead of an event per line: the lines are split out of the chunk
    in one go and handed to the pipeline as one list. ``lines`` hold the contents (no
    newline, no trailing ``\\r``, never blank); ``offset`` is where the first starts,
    ``end`` the resume offset after the last. ``starts``/``ends`` hold each line's own
    offsets when the lines are not exactly the bytes between them (CRLF lines, or lines that
    went through :func:`normalise_line`: a NUL, a lone CR, a blank or long line near them);
    None when the lines are exactly the newline-separated bytes from ``offset`` to ``end``
    (the common case: offsets are then worked out only when needed, e.g. to log where a
    rejected line starts). A skipped line has ``skipped`` set and no ``lines``.
    """

    path: str
    lines: list[bytes]
    offset: int
    end: int
    starts: list[int] | None = None
    ends: list[int] | None = None
    skipped: SkipReason | None = None

    def line_starts(self) -> list[int]:
        """Where each line starts (byte offset in its file)."""
        if self.starts is not None:
            return self.starts
        starts = list(accumulate((len(line) + 1 for line in self.lines), initial=self.offset))
        starts.pop()
        return starts

    def events(self) -> list[TailEvent]:
        """The same lines as one :class:`TailEvent` each (what ``Tailer.poll`` returns)."""
        path = self.path
        if self.skipped is not None:
            return [TailEvent(path, b"", self.offset, self.end, self.skipped)]
        starts = self.line_starts()
        ends = self.ends if self.ends is not None else [*starts[1:], self.end]
        return [TailEvent(path, line, start, end) for line, start, end in zip(self.lines, starts, ends, strict=True)]


@dataclass(frozen=True, slots=True)
class FileLag:
    """Where the tailer stands in one followed file."""

    path: str
    offset: int
    size: int
    bytes_behind: int


@dataclass(frozen=True, slots=True)
class TailStats:
    """Counters since this tailer was created (not restored from a checkpoint)."""

    source: str
    lines_read: int
    bytes_read: int
    skipped: dict[str, int]
    blank_lines: int
    nul_bytes_skipped: int
    truncations: int
    rotations: int
    deletions: int
    fingerprint_mismatches: int
    copies_adopted: int
    abandoned_partial_bytes: int
    open_errors: int
    read_errors: int
    files_followed: int
    files_waiting: int
    last_event_time: float | None
    files: tuple[FileLag, ...]
    bytes_lost: dict[str, int] = field(default_factory=dict)  # by reason, persisted across restarts
    open_files: int = 0  # descriptors held (followed + waiting), at most max_open_files
    files_matched: int = 0  # regular files the globs matched at the last poll

    @property
    def bytes_behind(self) -> int:
        """Total unread bytes over all followed files (the lag metric)."""
        return sum(f.bytes_behind for f in self.files)


def whole_lines(path: str, buf: bytes, start: int, stop: int, lines: list[bytes], base: int,
                max_line_bytes: int) -> TailBatch | None:
    """``lines`` (``buf[start:stop]`` split at its newlines; ``base`` is buf's file offset) as one
    batch when :func:`normalise_line` would change none of them, or only remove each one's
    trailing CR (a CRLF file): the rules applied to the chunk at once. None when some line needs
    them one by one (a NUL, a lone CR, a blank or a too long line)."""
    if buf.find(b"\0", start, stop) >= 0:
        return None
    if stop - start > max_line_bytes and max(map(len, lines)) > max_line_bytes:
        return None
    if buf.find(b"\r", start, stop) < 0:  # (find is memchr; count is several times slower)
        return TailBatch(path, lines, base + start, base + stop) if all(lines) else None
    crs = buf.count(b"\r", start, stop)
    if crs != len(lines) or buf.count(b"\r\n", start, stop) != crs:
        return None
    stripped = [line[:-1] for line in lines]
    if not all(stripped):
        return None
    starts = list(accumulate((len(line) + 1 for line in lines), initial=base + start))
    ends = starts[1:]
    starts.pop()
    return TailBatch(path, stripped, base + start, base + stop, starts, ends)


def normalise_line(line: bytes, max_line_bytes: int) -> tuple[bytes, SkipReason | None, int]:
    """One complete line (without its newline) as the tailer hands it out.

    Returns (content, skip reason or None, leading NUL bytes removed). Leading NUL
    runs (a copytruncate hole) are dropped; a line still longer than the cap is
    ``line_too_long``; a trailing ``\\r`` is removed; a line that still holds a NUL
    is ``nul_bytes``; empty content with no reason is a blank line. ``replay``
    applies the same function, so it counts what the sidecar would.
    """
    leading = 0
    if line and line[0] == 0:
        stripped = line.lstrip(b"\0")
        leading = len(line) - len(stripped)
        line = stripped
    if len(line) > max_line_bytes:
        return b"", "line_too_long", leading
    if line.endswith(b"\r"):
        line = line[:-1]
    if b"\0" in line:
        return b"", "nul_bytes", leading
    return line, None, leading
