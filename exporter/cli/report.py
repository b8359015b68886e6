"""``report FILE…``: the month report of request logs (text panel, markdown, JSON or HTML).

Counted with replay's arithmetic (``exporter.report.from_logs``); the human formats round,
the JSON (``schema: llm-savings-report/v1``) keeps replay's exact values.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from exporter.cli.log_inputs import add_log_arguments, open_log_inputs
from exporter.report.from_logs import report_files
from exporter.report.html import render_html
from exporter.report.json_report import render_json
from exporter.report.markdown import render_markdown
from exporter.report.summary import Report
from exporter.report.text import render_text

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
    add_log_arguments(parser, "JSON-lines logs ('-' for stdin)", format_flag="--input-format")
    parser.add_argument("--month", metavar="YYYY-MM", help="the month in focus (default: the newest counted)")
    parser.add_argument("--format", default="text", choices=tuple(WRITERS), help="output format (default text)")
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
    inputs = open_log_inputs(args)
    if inputs is None:
        return 2
    prices, decoder = inputs
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
