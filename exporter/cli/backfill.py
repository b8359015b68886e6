"""``backfill FILE… --out FILE.om``: historical logs as timestamped OpenMetrics for ``promtool tsdb``."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

from exporter.cli.log_inputs import add_log_arguments, open_log_inputs
from exporter.engine.records import parse_ts
from exporter.replay.backfill import backfill, reserved_labels
from exporter.replay.steps import StepError, parse_labels, parse_step


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "backfill",
        help="write the month-to-date counters of past logs as timestamped OpenMetrics (for promtool tsdb)",
        description="Replay request logs and write, at every step, the month-to-date counters a sidecar "
                    "scraped at that step would have shown, as OpenMetrics with timestamps: "
                    "promtool tsdb create-blocks-from openmetrics OUT DIR turns it into blocks. "
                    "Every series carries backfill=\"true\" (docs/backfill.md).",
    )
    add_log_arguments(parser, "JSON-lines logs, in the order written ('-': stdin)")
    parser.add_argument("--out", required=True, metavar="FILE.om", help="the OpenMetrics file to write")
    parser.add_argument("--step", default="1h", help="time between samples: 1h (default), 15m, 300s...")
    parser.add_argument("--until", metavar="TIME",
                        help="last sample time (RFC 3339 or epoch seconds), e.g. when the live sidecar started; "
                             "records from then on are left out (default: the start of the month after the "
                             "newest record, or now if sooner)")
    parser.add_argument("--label", action="append", default=[], metavar="NAME=VALUE",
                        help="a constant label on every series, e.g. job=llm-savings-exporter (repeatable)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        step = parse_step(args.step)
        labels = parse_labels(args.label, reserved_labels())
        until = _until(args.until) if args.until is not None else None
    except StepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"error: --until: {exc}", file=sys.stderr)
        return 2
    inputs = open_log_inputs(args)
    if inputs is None:
        return 2
    prices, decoder = inputs
    summary = backfill(args.files, prices, decoder, args.out, step=step, timezone=args.timezone,
                       dedupe_window_days=args.dedupe_window_days, max_line_bytes=args.max_line_bytes,
                       labels=labels, until=until)
    if summary.first_step is None or summary.last_step is None:
        print(f"error: no record with a usable timestamp in {summary.lines:,} line(s): nothing written",
              file=sys.stderr)
        return 1
    left = f"; {summary.after_until:,} record(s) at or after --until left out" if summary.after_until else ""
    print(f"{args.out}: {summary.samples:,} samples of {summary.series:,} series at {summary.steps:,} steps "
          f"from {_when(summary.first_step)} to {_when(summary.last_step)} ({summary.lines:,} lines read{left})",
          file=sys.stderr)
    return 0


def _until(text: str) -> float:
    """RFC 3339, or epoch seconds written as a number."""
    try:
        return parse_ts(float(text))
    except ValueError:
        return parse_ts(text)


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
