"""`backfill`: the month-to-date counters of historical logs as timestamped OpenMetrics.

What a sidecar scraped every ``step`` would have shown while the gateway wrote
these logs: the files are read in order through replay's pipeline (the same
arithmetic, dedupe and label caps), and the clock is the newest record
timestamp read so far. Before a record moves that clock past a step, every
catalog family with a ``month`` label is sampled at that step; so a sample at
``t`` holds the records logged before the clock reached ``t``. Samples go on,
flat, up to ``until`` (default: the start of the month after the newest
record, never later than the wall clock), so a query at a month's end reads
the month's final value; the last step's values are ``replay``'s totals.

Each series carries the catalog's names and labels plus ``backfill="true"``
(and any ``--label``), so a query can always tell backfilled series from a
live sidecar's (docs/backfill.md). Records at or after ``until`` are left out
and counted: a live sidecar counts those.

The output is written family by family (OpenMetrics does not interleave
families), each series' samples in time order, ending with ``# EOF``: what
``promtool tsdb create-blocks-from openmetrics`` reads.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import IO, NamedTuple

from exporter import catalog
from exporter.engine.dedupe import DedupeLedger
from exporter.engine.pipeline import NESTS_TOO_DEEPLY, Pipeline
from exporter.engine.records import Record
from exporter.exposition.render import Exposition
from exporter.prices.table import PriceTable
from exporter.replay.replay import DEFAULT_MAX_LINE_BYTES, read_blocks
from exporter.replay.steps import FamilyText, StepClock, Track, write_family
from exporter.sources.formats.registry import LineDecoder
from exporter.sources.tail import normalise_line


class BackfillSummary(NamedTuple):
    """What one backfill wrote (printed by the command)."""

    lines: int
    steps: int
    first_step: float | None
    last_step: float | None
    series: int
    samples: int
    after_until: int  # records dated at or after ``until``: left to the live sidecar


class _Recorder:
    """Samples the month families of a pipeline's aggregates at each step, keeping only changes."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.exposition = Exposition(pipeline.month_of.start)
        self.steps: list[float] = []
        self.tracks: dict[str, dict[tuple[str, ...], Track]] = {}

    def snapshot(self, ts: float) -> None:
        index = len(self.steps)
        self.steps.append(ts)
        for family, series in self.exposition.series(self.pipeline.aggregates, ()):
            if not family.has_month:
                continue
            tracks = self.tracks.setdefault(family.spec.name, {})
            for labels, value in series:
                track = tracks.get(labels)
                if track is None:
                    tracks[labels] = Track(index, [(index, value)])
                elif track.changes[-1][1] != value:
                    track.changes.append((index, value))

    def write(self, out: IO[str], constant: tuple[tuple[str, str], ...]) -> tuple[int, int]:
        """Every family in catalog order, then ``# EOF``; returns (series, samples)."""
        series = samples = 0
        for name, family in self.exposition.families.items():
            tracks = self.tracks.get(name, {})
            spec = family.spec
            created = spec.family_name + "_created" if spec.type == "counter" else None
            text = FamilyText(family.om_header, spec.name, created)
            samples += write_family(out, text, spec.labels, tracks, self.steps, constant,
                                    self.pipeline.month_of.start)
            series += len(tracks)
        out.write("# EOF\n")
        return series, samples


def backfill(paths: list[str], prices: PriceTable, decoder: LineDecoder, out_path: str, *,
             step: float = 3600.0, timezone: str = "UTC", dedupe_window_days: float = 40.0,
             max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, labels: tuple[tuple[str, str], ...] = (),
             until: float | None = None, wall_clock: Callable[[], float] = time.time) -> BackfillSummary:
    """Write the timestamped month-to-date counters of ``paths`` to ``out_path`` (atomically).

    ``labels`` are the constant labels (``backfill="true"`` first, see
    ``steps.parse_labels``). Nothing is written when no record has a usable
    timestamp (``steps`` is then 0).
    """
    # replay's pipeline (see ``replay_pipeline``), with the clock passed in
    pipeline = Pipeline(prices, timezone=timezone, counter=decoder.counter, wall_clock=wall_clock,
                        ledger=DedupeLedger(dedupe_window_days, stable=False))
    recorder = _Recorder(pipeline)
    clock = StepClock(step, pipeline.month_of, pipeline.month_of.start)
    horizon = wall_clock() + pipeline.future_skew_seconds  # later records are future_ts: no clock move
    newest: float | None = None
    next_step = 0.0
    lines = after_until = 0
    for raw in _lines(paths):
        lines += 1
        line, skipped, _nuls = normalise_line(raw, max_line_bytes)
        if skipped is not None:
            pipeline.reject(skipped, "backfill")
            continue
        try:
            result = decoder(line)
        except RecursionError:  # as the pipeline's own loop: a hostile line is rejected, never a crash
            result = NESTS_TOO_DEEPLY
        if result is None:
            continue  # a blank line
        ts = result.ts
        if ts is not None and 0 <= ts <= horizon:
            if until is not None and ts >= until:
                after_until += 1
                continue
            if newest is None or ts > newest:
                if newest is None:
                    next_step = clock.next_after(ts)
                while next_step <= ts:
                    recorder.snapshot(next_step)
                    next_step = clock.next_after(next_step)
                newest = ts
        if isinstance(result, Record):
            pipeline.apply(result)
        else:
            pipeline.reject(result.reason, "backfill", ts)
    if newest is None:
        return BackfillSummary(lines, 0, None, None, 0, 0, after_until)
    end = until if until is not None else default_until(newest, clock, wall_clock())
    while next_step < end:
        recorder.snapshot(next_step)
        next_step = clock.next_after(next_step)
    recorder.snapshot(end)
    temporary = f"{out_path}.tmp{os.getpid()}"
    try:
        with open(temporary, "w", encoding="utf-8") as out:
            series, samples = recorder.write(out, labels)
        os.replace(temporary, out_path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return BackfillSummary(lines, len(recorder.steps), recorder.steps[0], recorder.steps[-1], series, samples,
                           after_until)


def _lines(paths: list[str]) -> Iterator[bytes]:
    """Every line of ``paths`` in order, without its newline (``-``: stdin)."""
    for path in paths:
        stream: IO[bytes] = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
        try:
            for block, _unusual in read_blocks(stream):
                yield from block
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()


def default_until(newest: float, clock: StepClock, now: float) -> float:
    """The start of the month after the newest record, or the last step before ``now`` if that is sooner
    (never before the step after the newest record): samples dated ahead of the clock help no one."""
    month_end = clock.next_month_start(newest)
    if month_end <= now:
        return month_end
    return max(clock.next_after(newest), math.floor(now / clock.step) * clock.step)


def reserved_labels() -> set[str]:
    """Label names the backfilled families already carry (a ``--label`` may not reuse one)."""
    return {label for spec in catalog.CATALOG for label in spec.labels}


__all__ = ["BackfillSummary", "backfill", "default_until", "reserved_labels"]
