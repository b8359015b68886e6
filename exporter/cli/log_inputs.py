"""The inputs shared by the commands that count log files (replay, report, backfill).

One declaration of their arguments and one place that opens them (price table, line decoder, the
files' existence), so the three commands refuse a bad input with the same message and exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, NamedTuple

from exporter.prices.table import PriceTable, PriceTableError, load_price_table
from exporter.replay.replay import DEFAULT_MAX_LINE_BYTES
from exporter.sources.formats.registry import FORMATS, LineDecoder, make_line_decoder


class LogInputs(NamedTuple):
    prices: PriceTable
    decoder: LineDecoder


def add_log_arguments(parser: Any, files_help: str, format_flag: str = "--format") -> None:
    """FILE…, --prices, the input format (``format_flag``), --mapping, --timezone, --dedupe-window-days,
    --max-line-bytes."""
    parser.add_argument("files", nargs="+", metavar="FILE", help=files_help)
    parser.add_argument("--prices", metavar="FILE", help="price table (default: the bundled one)")
    parser.add_argument(format_flag, dest="input_format", default="canonical", choices=FORMATS,
                        help="input format (default canonical)")
    parser.add_argument("--mapping", metavar="FILE", help=f"field mapping file for {format_flag} mapping")
    parser.add_argument("--timezone", default="UTC", help="time zone of month boundaries (default UTC)")
    parser.add_argument("--dedupe-window-days", type=float, default=40.0, help="dedupe window (default 40)")
    parser.add_argument("--max-line-bytes", type=int, default=DEFAULT_MAX_LINE_BYTES,
                        help="longer lines are rejected line_too_long, as the sidecar does (default 1 MiB)")


def open_log_inputs(args: argparse.Namespace) -> LogInputs | None:
    """The price table and line decoder the arguments name, or None after printing why (exit 2)."""
    try:
        prices = load_price_table(args.prices)
        decoder = make_line_decoder(args.input_format, args.mapping)
    except (PriceTableError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    for path in args.files:
        if path != "-" and not os.path.isfile(path):
            print(f"error: {path}: no such file", file=sys.stderr)
            return None
    return LogInputs(prices, decoder)
