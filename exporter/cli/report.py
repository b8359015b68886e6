"""``report FILE…``: the month report of request logs (text panel, markdown, JSON or HTML).

Counted with replay's arithmetic (``exporter.report.from_logs``); the human formats round,
the JSON (``schema: llm-savings-report/v1``) keeps replay's exact values.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from exporter.prices.table import PriceTableError, load_price_table
from exporter.replay.replay import DEFAULT_MAX_LINE_BYTES
from exporter.report.from_logs import report_files
from exporter.report.html import render_html
from exporter.report.json_report import render_json
from exporter.report.markdown import render_markdown
from exporter.report.summary import Report
from exporter.report.text import render_text
from exporter.sources.formats.registry import FORMATS, make_line_decoder

WRITERS: dict[str, Callable[[Report], str]] = {"text": render_text, "markdown": render_markdown,
                                               "json": render_json, "html": render_html}
MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="the month report of request logs: a terminal panel, markdown, JSON or a self-contained HTML page",
        description="Count request logs with replay's arithmetic and print the month report: headline figures, "
                    "breakdowns by model, tenant and component, the months, and provenance. Human formats round; "
                    "JSON keeps replay's exact values.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="JSON-lines logs ('-' for stdin)")
    parser.add_argument("--prices", metavar="FILE", help="price table (default: the bundled one)")
    parser.add_argument("--month", metavar="YYYY-MM", help="the month in focus (default: the newest counted)")
    parser.add_argument("--format", default="text", choices=tuple(WRITERS), help="output format (default text)")
    parser.add_argument("--input-format", default="canonical", choices=FORMATS,
                        help="format of the logs, as replay's --format (default canonical)")
    parser.add_argument("--mapping", metavar="FILE", help="field mapping file for --input-format mapping")
    parser.add_argument("--timezone", default="UTC", help="time zone of month boundaries (default UTC)")
    parser.add_argument("--dedupe-window-days", type=float, default=40.0, help="dedupe window (default 40)")
    parser.add_argument("--max-line-bytes", type=int, default=DEFAULT_MAX_LINE_BYTES,
                        help="longer lines are rejected line_too_long, as the sidecar does (default 1 MiB)")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.month is not None and not MONTH.fullmatch(args.month):
        print(f"error: --month {args.month!r}: expected YYYY-MM", file=sys.stderr)
        return 2
    try:
        ZoneInfo(args.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        print(f"error: --timezone {args.timezone!r}: not a time zone (e.g. UTC, Europe/Berlin)", file=sys.stderr)
        return 2
    try:
        prices = load_price_table(args.prices)
    except PriceTableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        decoder = make_line_decoder(args.input_format, args.mapping)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in args.files:
        if path != "-" and not os.path.isfile(path):
            print(f"error: {path}: no such file", file=sys.stderr)
            return 2
    report = report_files(args.files, prices, decoder, month=args.month, timezone=args.timezone,
                          dedupe_window_days=args.dedupe_window_days, max_line_bytes=args.max_line_bytes)
    if report.note:
        print(f"note: {report.note}", file=sys.stderr)
    text = WRITERS[args.format](report)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
    else:
        sys.stdout.write(text)
    return 0
