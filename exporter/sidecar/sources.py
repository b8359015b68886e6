"""A configured file source inside the sidecar: its tailer, its decoder, its rejected-line log."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field

from exporter.engine.pipeline import Pipeline
from exporter.sidecar.config import SourceConfig
from exporter.sources.formats.registry import LineDecoder
from exporter.sources.tail import TailBatch, Tailer

log = logging.getLogger(__name__)
# Rejected lines logged (source, file, byte offset, reason; never the line) per source and minute.
REJECT_LOGS_PER_MINUTE = 10


@dataclass
class SourceRunner:
    """One configured source: its tailer and how its lines become records."""

    config: SourceConfig
    tailer: Tailer
    decoder: LineDecoder | None
    last_record_wall: float | None = None
    error: str | None = None
    reject_log: RejectLog = field(default_factory=lambda: RejectLog())

    def pump(self, pipeline: Pipeline, max_lines: int, wall: float) -> int:
        """Feed up to ``max_lines`` lines (and skipped lines) of one tailer pass; returns how many.

        Each read's lines reach the pipeline as one batch (``ingest_watched`` for canonical lines,
        the plain-line loop's; ``ingest_lines`` for other formats): no object and no call per line
        here. The tailer's offsets already include the whole pass, so a line that fails must not
        cost the lines after it: a failure is contained, counted and the batch goes on after that
        line.
        """
        batches = self.tailer.poll_batches(max_lines)
        name = self.config.name
        count = 0
        for batch in batches:
            if batch.skipped is None:
                count += len(batch.lines)
                self._feed(pipeline, batch, wall)
                continue
            count += 1
            seen = pipeline.rejections
            try:
                pipeline.reject(batch.skipped, name)
            except Exception as exc:  # as for a line: contained and counted
                log.error("source %s: %s at %s offset %d; counted as internal_error",
                          name, type(exc).__name__, batch.path, batch.offset)
                pipeline.reject("internal_error", name)
            if pipeline.rejections != seen:
                self.reject_log.note(name, batch.path, batch.offset, pipeline.last_rejection, wall)
        if batches:
            self.last_record_wall = wall
        return count

    def _feed(self, pipeline: Pipeline, batch: TailBatch, wall: float) -> None:
        """One batch through the pipeline; rejected lines are logged by place (file, offset), never content."""
        name = self.config.name
        lines = batch.lines
        first = 0
        while first < len(lines):
            watch = _Watch()
            failed: tuple[int, Exception] | None = None
            try:
                if self.decoder is not None and self.decoder.decode_line is None:  # canonical: the plain loop
                    pipeline.ingest_watched(lines, first, watch)
                elif self.decoder is not None:
                    pipeline.ingest_lines(watch.follow(lines, first, pipeline), name, self.decoder.decode_line)
                else:
                    for line in watch.follow(lines, first, pipeline):
                        self._otlp_line(pipeline, line)
            except Exception as problem:  # never the line's text in the log: type and place only
                failed = (max(first, watch.at), problem)
            if not watch.rejected and failed is None:
                return
            starts = batch.line_starts()
            for at, reason in watch.rejected:
                self.reject_log.note(name, batch.path, starts[at], reason, wall)
            if failed is None:
                return
            at, error = failed
            log.error("source %s: %s at %s offset %d; counted as internal_error",
                      name, type(error).__name__, batch.path, starts[at])
            pipeline.reject("internal_error", name)
            self.reject_log.note(name, batch.path, starts[at], pipeline.last_rejection, wall)
            first = at + 1

    def _otlp_line(self, pipeline: Pipeline, line: bytes) -> None:
        from exporter.sources.otlp.file import records_from_otlp_json_line

        records, reasons = records_from_otlp_json_line(line)
        for record in records:
            pipeline.ingest_object(record, self.config.name)
        for reason in reasons:
            pipeline.reject(reason, self.config.name)


class _Watch:
    """Hands a batch's lines to the pipeline one at a time and notes, after each, whether the
    pipeline rejected it (``rejected``: index and reason) and which line it is on (``at``):
    what the log needs to say where a rejected or failing line starts. It relies on the
    pipeline taking the next line only once it is done with the last one (a plain ``for``)."""

    __slots__ = ("at", "rejected")

    def __init__(self) -> None:
        self.at = -1
        self.rejected: list[tuple[int, str]] = []

    def follow(self, lines: list[bytes], first: int, pipeline: Pipeline) -> Iterator[bytes]:
        rejected = self.rejected
        seen = pipeline.rejections
        for at in range(first, len(lines)):
            self.at = at
            yield lines[at]
            if pipeline.rejections != seen:
                seen = pipeline.rejections
                rejected.append((at, pipeline.last_rejection))


@dataclass
class RejectLog:
    """Logs rejected lines by place (source, file, byte offset) and reason, at most
    REJECT_LOGS_PER_MINUTE per source and minute, then one summary of the rest. The line's
    content never reaches the log (it may hold prompt text)."""

    window_start: float = 0.0
    logged: int = 0
    suppressed: int = 0
    total: int = 0

    def note(self, source: str, path: str, offset: int, reason: str, wall: float) -> None:
        self.total += 1
        if wall - self.window_start >= 60.0:
            if self.suppressed:
                log.warning("source %s: %d more rejected line(s) in the last minute not logged",
                            source, self.suppressed)
            self.window_start, self.logged, self.suppressed = wall, 0, 0
        if self.logged < REJECT_LOGS_PER_MINUTE:
            self.logged += 1
            log.warning("source %s: rejected line at %s byte offset %d: %s", source, path, offset, reason)
        else:
            self.suppressed += 1


def source_problem(runner: SourceRunner) -> str | None:
    """Why a file source is not working, or None: its last error, or no file it can open."""
    if runner.error:
        return runner.error
    stats = runner.tailer.stats()
    if stats.open_errors and not stats.files_followed and not stats.files_waiting:
        return f"can open none of its files ({stats.open_errors} open errors; see the log)"
    return None
