"""``report FILE…``: the month report of request logs, counted with replay's own pipeline and loop.

The figures are replay's (``exporter.replay``): the same pipeline, the same reading
loop and the same month totals, so ``report --format json`` shows, month by month,
exactly what ``replay --json`` prints, plus the breakdowns of the same aggregates.
"""

from __future__ import annotations

import os
import time

from exporter.prices.table import PriceTable
from exporter.replay.replay import DEFAULT_MAX_LINE_BYTES, replay_files, replay_json, replay_pipeline
from exporter.report.live import rfc3339
from exporter.report.summary import Report, build_report
from exporter.sources.formats.registry import LineDecoder


def describe_inputs(paths: list[str]) -> str:
    """The inputs as a reader wants them named: up to three file names, else how many."""
    names = ["stdin" if path == "-" else os.path.basename(path) for path in paths]
    return ", ".join(names) if len(names) <= 3 else f"{len(names)} files"


def report_files(paths: list[str], prices: PriceTable, decoder: LineDecoder, *, month: str | None = None,
                 timezone: str = "UTC", dedupe_window_days: float = 40.0,
                 max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, now: float | None = None) -> Report:
    """Replay ``paths`` in one pass and summarise them, ``month`` (else the newest counted) in focus."""
    pipeline = replay_pipeline(prices, decoder, timezone, dedupe_window_days)
    replay_files(paths, pipeline, decoder, max_line_bytes=max_line_bytes)
    totals = replay_json(pipeline)["months"]
    return build_report(pipeline.aggregates, totals, source=f"replay of {describe_inputs(paths)}",
                        generated_at=rfc3339(time.time() if now is None else now), timezone=timezone, month=month,
                        price_versions=[version.version for version in prices.versions])
