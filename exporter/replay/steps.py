"""The pure parts of ``backfill``: step times, durations, and the timestamped OpenMetrics text.

Kept apart from the reading loop (``exporter.replay.backfill``) so the arithmetic
of steps and the writer can be tested on their own. A step is the instant a
sidecar scraped every ``step`` seconds would have been scraped; each month's
first instant (in the configured time zone) is a step too, so a query at a
month's end finds that month's final value whatever the step.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import IO, NamedTuple

from exporter.exposition.lines import escape, format_value

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
BACKFILL_LABEL = "backfill"  # every backfilled series carries backfill="true"
MIN_STEP_SECONDS = 1.0


class StepError(ValueError):
    """A step, label or time the backfill refuses (named in the message)."""


def parse_step(text: str) -> float:
    """``"1h"``, ``"15m"``, ``"90s"``, ``"1d"`` or plain seconds -> seconds; at least a second."""
    match = _DURATION.match(text.strip())
    if not match:
        raise StepError(f"--step: {text!r} is not a duration (e.g. 1h, 15m, 300s)")
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds < MIN_STEP_SECONDS:
        raise StepError(f"--step: {text!r} is shorter than {MIN_STEP_SECONDS:g}s")
    return seconds


def parse_labels(pairs: Iterable[str], reserved: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """``NAME=VALUE`` pairs -> constant labels, refusing names the series already carry."""
    taken = {*reserved, BACKFILL_LABEL}
    found: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not _LABEL_NAME.match(name) or name.startswith("__"):
            raise StepError(f"--label: {pair!r} is not NAME=VALUE with a Prometheus label name")
        if name in taken or name in found:
            raise StepError(f"--label: {name!r} is already a label of the backfilled series")
        found[name] = value
    return ((BACKFILL_LABEL, "true"), *found.items())


class StepClock:
    """The next step after an instant: the next multiple of ``step`` or the next month's start."""

    def __init__(self, step: float, month_of: Callable[[float], str], month_start: Callable[[str], float]) -> None:
        self.step = step
        self.month_of = month_of
        self.month_start = month_start

    def next_after(self, ts: float) -> float:
        """The first step strictly after ``ts``."""
        grid = (math.floor(ts / self.step) + 1) * self.step
        return min(grid, self.next_month_start(ts))

    def next_month_start(self, ts: float) -> float:
        month = self.month_of(ts)
        year, mon = int(month[:4]), int(month[5:7])
        following = f"{year + mon // 12:04d}-{mon % 12 + 1:02d}"
        return self.month_start(following)


def timestamp_text(ts: float) -> str:
    """An OpenMetrics timestamp: whole seconds as an integer, else the shortest exact decimal."""
    return str(int(ts)) if ts == int(ts) else repr(ts)


class Track(NamedTuple):
    """One series over the steps: the index of its first step and its value at each change."""

    first: int
    changes: list[tuple[int, float | int]]


class FamilyText(NamedTuple):
    """What the writer needs of a catalog family: its OpenMetrics header and sample names."""

    header: str
    name: str
    created: str | None  # the ``_created`` sample name of a counter with a month, else None


def label_text(names: tuple[str, ...], values: tuple[str, ...], constant: tuple[tuple[str, str], ...]) -> str:
    pairs = [*zip(names, values, strict=True), *constant]
    return "{" + ",".join(f'{name}="{escape(value)}"' for name, value in pairs) + "}"


def write_family(out: IO[str], family: FamilyText, label_names: tuple[str, ...],
                 tracks: dict[tuple[str, ...], Track], steps: list[float],
                 constant: tuple[tuple[str, str], ...], month_start: Callable[[str], float]) -> int:
    """One family's samples, series after series, each at every step from its first; returns samples."""
    if not tracks:
        return 0
    out.write(family.header)
    written = 0
    for values, track in tracks.items():
        labels = label_text(label_names, values, constant)
        created = None
        if family.created is not None and values[0] != "unknown":
            created = f"{family.created}{labels} {format_value(month_start(values[0]))} "
        changes = iter(track.changes)
        _index, value = next(changes)
        upcoming = next(changes, None)
        lines = []
        for index in range(track.first, len(steps)):
            while upcoming is not None and upcoming[0] <= index:
                value = upcoming[1]
                upcoming = next(changes, None)
            stamp = timestamp_text(steps[index])
            lines.append(f"{family.name}{labels} {format_value(value)} {stamp}\n")
            if created is not None:
                lines.append(created + stamp + "\n")
        out.write("".join(lines))
        written += len(lines)
    return written

