"""What the tailer hands out: line events, the rules for one line, counters.

:func:`normalise_line` is the single place that decides what a complete line
becomes (content, skipped, or blank); ``replay`` applies it too, so it counts
what the sidecar would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
