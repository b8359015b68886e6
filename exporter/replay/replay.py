"""`replay`: the sidecar's arithmetic over whole files, no server.

Runs exactly the pipeline the sidecar runs, so the month-to-date totals it
prints are the ones the counters would hold after reading the same files.
Unlike the tailer, replay treats a file's unterminated last line as complete:
the file is finished. The progress bar on stderr is drawn here, by the loop
that reads (``progress=True``); the command's table and JSON are the CLI's.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import IO, Any, NamedTuple

from exporter.engine.dedupe import DedupeLedger
from exporter.engine.pipeline import Pipeline
from exporter.prices.table import PriceTable
from exporter.replay.parallel import (
    MIN_BYTES_PER_JOB,
    PartResult,
    Range,
    add_parts,
    can_fork,
    count_ranges,
    default_jobs,
    note,
    run_parts,
    split_ranges,
    why_not_additive,
)
from exporter.sidecar.config import SourceConfig
from exporter.sources.formats.registry import LineDecoder
from exporter.sources.tail import normalise_line

DEFAULT_MAX_LINE_BYTES = SourceConfig().max_line_bytes

READ_CHUNK = 1 << 20


class RejectedLine(NamedTuple):
    """Where a rejected line starts and why; never its content (it may hold prompt text)."""

    path: str
    offset: int
    reason: str


def explain_rejects(paths: list[str], pipeline_factory: Callable[[], Pipeline], limit: int = 100,
                    decoder: LineDecoder | None = None,
                    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> tuple[list[RejectedLine], int]:
    """The rejected lines of ``paths`` (the first ``limit``) with their byte offsets, and the total.

    One pass, line by line, through one pipeline (so duplicates are duplicates, not rejections)
    and the tailer's line rules, as the sidecar would read the files."""
    pipeline = pipeline_factory()
    decode = decoder.decode_line if decoder is not None else None
    listed: list[RejectedLine] = []
    total = 0
    for path in paths:
        stream: IO[bytes] = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
        try:
            offset = 0
            for raw in stream:
                start, offset = offset, offset + len(raw)
                line, reason, _nuls = normalise_line(raw.rstrip(b"\n"), max_line_bytes)
                before = pipeline.rejections
                if reason is not None:
                    pipeline.reject(reason, "replay")
                elif line:
                    pipeline.ingest_line(line, "replay", decode)
                else:
                    continue
                if pipeline.rejections != before:
                    total += 1
                    if len(listed) < limit:
                        listed.append(RejectedLine(path, start, pipeline.last_rejection))
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
    return listed, total


def replay_pipeline(prices: PriceTable, decoder: LineDecoder, timezone: str = "UTC",
                    dedupe_window_days: float = 40.0) -> Pipeline:
    """The pipeline ``replay`` feeds: the sidecar's, but its ledger is never checkpointed, so ids are
    keyed by the process's own string hash (a fifth of the stable digest's cost)."""
    ledger = DedupeLedger(dedupe_window_days, stable=False)
    return Pipeline(prices, timezone=timezone, counter=decoder.counter, ledger=ledger)


def replay_files(paths: list[str], pipeline: Pipeline, decoder: LineDecoder | None, progress: bool = False,
                 max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> int:
    """Feed every line of ``paths`` to ``pipeline``; returns the number of lines read."""
    total_bytes = sum(os.path.getsize(p) for p in paths if p != "-") if progress else 0
    meter = _Progress(total_bytes) if progress else None
    lines = 0
    for path in paths:
        stream: IO[bytes] = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
        try:
            lines += feed_lines(read_blocks(stream), pipeline, decoder, max_line_bytes, meter)
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
    if meter is not None:
        meter.done()
    return lines


def read_blocks(stream: IO[bytes], limit: int | None = None) -> Iterator[tuple[list[bytes], bool]]:
    """The lines of ``stream`` (at most ``limit`` bytes of it), without their newline, a block at a time.

    Each block comes with whether it holds a NUL or CR byte (then its lines need the
    tailer's line rules). An unterminated last line is a line: replay treats the file
    as finished.
    """
    pending: list[bytes] = []  # the start of a line that has no newline yet (kept in pieces: linear)
    while limit is None or limit > 0:
        block = stream.read(READ_CHUNK if limit is None else min(READ_CHUNK, limit))
        if not block:
            break
        if limit is not None:
            limit -= len(block)
        cut = block.rfind(b"\n")
        if cut < 0:
            pending.append(block)
            continue
        lines = block.split(b"\n")  # no copy of the block first: only its first line is joined
        tail = lines.pop()  # the start of a line with no newline yet ("" when the block ends one)
        unusual = block.find(b"\0", 0, cut) >= 0 or block.find(b"\r", 0, cut) >= 0
        if pending:
            unusual = unusual or any(b"\0" in piece or b"\r" in piece for piece in pending)
            lines[0] = b"".join([*pending, lines[0]])
        pending = [tail] if tail else []
        yield lines, unusual
    if pending:
        last = b"".join(pending)
        yield [last], b"\0" in last or b"\r" in last


def feed_lines(blocks: Iterable[tuple[list[bytes], bool]], pipeline: Pipeline, decoder: LineDecoder | None,
               max_line_bytes: int, meter: _Progress | None = None) -> int:
    """The replay loop: lines through the tailer's line rules, then the pipeline; returns lines read."""
    count = 0
    decode = decoder.decode_line if decoder is not None else None  # None: canonical, the pipeline's fast path
    for lines, unusual in blocks:
        count += len(lines)
        if unusual or max(map(len, lines)) > max_line_bytes:  # (a block holds one line at least)
            lines = _normalised(lines, pipeline, max_line_bytes)
        pipeline.ingest_lines(lines, "replay", decode)
        if meter is not None:
            meter.advance(sum(map(len, lines)) + len(lines), len(lines))
    return count


def _normalised(lines: list[bytes], pipeline: Pipeline, max_line_bytes: int) -> list[bytes]:
    """The tailer's own line rules (NUL holes, long lines, CRLF), so replay counts what the sidecar would."""
    kept = []
    for line in lines:
        line, skipped, _nuls = normalise_line(line, max_line_bytes)
        if skipped is not None:
            pipeline.reject(skipped, "replay")
        else:
            kept.append(line)
    return kept


class _Progress:
    """A progress bar on stderr, redrawn at most five times a second."""

    def __init__(self, total_bytes: int, label: str = "") -> None:
        self.total = total_bytes
        self.label = label
        self.done_bytes = 0
        self.lines = 0
        self.last_draw = 0.0

    def advance(self, size: int, lines: int) -> None:
        self.done_bytes += size
        self.lines += lines
        if (now := time.monotonic()) - self.last_draw > 0.2:
            self.last_draw = now
            _draw(self.done_bytes, self.total, self.lines, self.label)

    def done(self) -> None:
        _draw(self.total, self.total, self.lines, self.label)
        sys.stderr.write("\n")


def replay_in_parts(paths: list[str], make_pipeline: Callable[[], Pipeline], decoder: LineDecoder, jobs: int,
                    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, progress: bool = False) -> Pipeline | None:
    """Replay ``paths`` in ``jobs`` forked processes (see ``exporter.replay.parallel``).

    Returns the pipeline holding the one-pass counts, or None when the parts
    were not independent or a job failed (the caller then replays in one pass).
    """
    parts = split_ranges(paths, jobs)

    def work(ranges: list[Range], meter: _Progress | None, here: bool) -> PartResult:
        pipeline = make_pipeline()
        return count_ranges(ranges, pipeline, lambda stream, limit: feed_lines(
            read_blocks(stream, limit), pipeline, decoder, max_line_bytes, meter), here=here)

    first_meter = _Progress(sum(end - start for _, start, end in parts[0]),
                            f" (part 1 of {len(parts)}, counted here)") if progress else None
    works = [partial(work, ranges, first_meter if index == 0 else None, index == 0)  # run_parts runs the first here
             for index, ranges in enumerate(parts)]
    results = run_parts(works)
    if first_meter is not None:
        first_meter.done()
    if isinstance(results, str):
        note(f"a parallel job failed, counting again in one pass: {results.strip().splitlines()[-1]}")
        return None
    pipeline = make_pipeline()
    reason = why_not_additive(results, pipeline.ledger.window_days, pipeline.ledger.max_ids,
                              {cap.name: cap.max_values for cap in pipeline.caps.all()})
    if reason is not None:
        note(f"{reason}: counting again in one pass")
        return None
    add_parts(pipeline, results)
    return pipeline


def _parallel_jobs(paths: list[str], requested: int) -> int:
    """How many jobs to run: 1 unless the input is big regular files and processes can fork."""
    if requested == 1 or not can_fork() or any(p == "-" or not os.path.isfile(p) for p in paths):
        return 1
    by_size = sum(os.path.getsize(p) for p in paths) // MIN_BYTES_PER_JOB
    return max(1, min(requested or default_jobs(), by_size))


def _draw(done: int, total: int, lines: int, label: str = "") -> None:
    share = done / total if total else 1.0
    bar = "#" * int(share * 30)
    sys.stderr.write(f"\r[{bar:<30}] {share:6.1%} {lines:,} lines{label}")
    sys.stderr.flush()


def replay_json(pipeline: Pipeline) -> dict[str, Any]:
    agg = pipeline.aggregates
    rejected_by_reason: dict[str, int] = {}
    for (_month, reason), count in sorted(agg.rejected.items()):
        rejected_by_reason[reason] = rejected_by_reason.get(reason, 0) + count
    return {"months": agg.month_totals(), "rejected_by_reason": rejected_by_reason}


def replay(paths: list[str], prices: PriceTable, decoder: LineDecoder, *, timezone: str = "UTC",
           dedupe_window_days: float = 40.0, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, jobs: int = 0,
           progress: bool = False) -> dict[str, Any]:
    """The month-to-date totals of ``paths`` (:func:`replay_json`), in parallel parts when that is
    possible and gives the one-pass result (``jobs`` 0: one per CPU), else in one pass."""

    def make_pipeline() -> Pipeline:
        return replay_pipeline(prices, decoder, timezone, dedupe_window_days)

    jobs = _parallel_jobs(paths, jobs)
    pipeline = replay_in_parts(paths, make_pipeline, decoder, jobs, max_line_bytes, progress) \
        if jobs > 1 else None
    if pipeline is None:
        pipeline = make_pipeline()
        replay_files(paths, pipeline, decoder, progress=progress, max_line_bytes=max_line_bytes)
    return replay_json(pipeline)
