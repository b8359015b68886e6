"""A configured file source inside the sidecar: its tailer, its decoder, its rejected-line log."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from exporter.engine.pipeline import Pipeline
from exporter.sidecar.config import SourceConfig
from exporter.sources.formats.registry import LineDecoder
from exporter.sources.tail import Tailer

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
        events = self.tailer.poll(max_lines)
        name = self.config.name
        seen = pipeline.rejections
        for event in events:
            # The tailer's offsets already include this batch: one line that fails must
            # not cost the lines after it, so a failure is contained and counted here.
            try:
                if event.skipped is not None:
                    pipeline.reject(event.skipped, name)
                elif self.decoder is not None:
                    pipeline.ingest_line(event.line, name, self.decoder.decode_line)
                else:
                    self._otlp_line(pipeline, event.line)
            except Exception as exc:  # never the line's text in the log: type and place only
                log.error("source %s: %s at %s offset %d; counted as internal_error",
                          name, type(exc).__name__, event.path, event.offset)
                pipeline.reject("internal_error", name)
            if pipeline.rejections != seen:  # this line was rejected: say where (file, offset), never what
                seen = pipeline.rejections
                self.reject_log.note(name, event.path, event.offset, pipeline.last_rejection, wall)
        if events:
            self.last_record_wall = wall
        return len(events)

    def _otlp_line(self, pipeline: Pipeline, line: bytes) -> None:
        from exporter.sources.otlp.file import records_from_otlp_json_line

        records, reasons = records_from_otlp_json_line(line)
        for record in records:
            pipeline.ingest_object(record, self.config.name)
        for reason in reasons:
            pipeline.reject(reason, self.config.name)


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
