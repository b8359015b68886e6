"""`replay`: the sidecar's arithmetic over whole files, no server.

Runs exactly the pipeline the sidecar runs, so the month-to-date totals it
prints are the ones the counters would hold after reading the same files.
Unlike the tailer, replay treats a file's unterminated last line as complete:
the file is finished.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import IO, Any

from exporter.config import SourceConfig
from exporter.decoders import FORMATS, make_line_decoder
from exporter.pipeline import Pipeline
from exporter.prices import PriceTableError, load_price_table
from exporter.sources.jsonl_tail import normalise_line

DEFAULT_MAX_LINE_BYTES = SourceConfig().max_line_bytes

READ_CHUNK = 1 << 20


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="print the month-to-date totals the counters would hold for these files",
        description="Replay request logs through the full arithmetic and print month-to-date totals.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="JSON-lines logs ('-' for stdin)")
    parser.add_argument("--prices", metavar="FILE", help="price table (default: the bundled one)")
    parser.add_argument("--format", default="canonical", choices=FORMATS, help="input format (default canonical)")
    parser.add_argument("--mapping", metavar="FILE", help="field mapping file for --format mapping")
    parser.add_argument("--timezone", default="UTC", help="time zone of month boundaries (default UTC)")
    parser.add_argument("--dedupe-window-days", type=float, default=40.0, help="dedupe window (default 40)")
    parser.add_argument("--max-line-bytes", type=int, default=DEFAULT_MAX_LINE_BYTES,
                        help="longer lines are rejected line_too_long, as the sidecar does (default 1 MiB)")
    parser.add_argument("--json", action="store_true", help="print the DESIGN.md §5 JSON")
    parser.set_defaults(func=run_replay)


def replay_files(paths: list[str], pipeline: Pipeline, decoder: Any, progress: bool = False,
                 max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> int:
    """Feed every line of ``paths`` to ``pipeline``; returns the number of lines read."""
    total_bytes = sum(os.path.getsize(p) for p in paths if p != "-") if progress else 0
    done_bytes = 0
    lines = 0
    last_draw = 0.0
    for path in paths:
        stream: IO[bytes] = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
        try:
            ingest = pipeline.ingest_line
            for raw in stream:
                lines += 1
                # the tailer's own line rules (NUL holes, long lines, CRLF), so replay counts what the sidecar would
                line, skipped, _nuls = normalise_line(raw.rstrip(b"\n"), max_line_bytes)
                if skipped is not None:
                    pipeline.reject(skipped, "replay")
                elif line:
                    ingest(line, "replay", decoder)
                if progress:
                    done_bytes += len(raw)
                    if lines & 0x3FFF == 0 and (now := time.monotonic()) - last_draw > 0.2:
                        last_draw = now
                        _draw(done_bytes, total_bytes, lines)
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
    if progress:
        _draw(total_bytes, total_bytes, lines)
        sys.stderr.write("\n")
    return lines


def _draw(done: int, total: int, lines: int) -> None:
    share = done / total if total else 1.0
    bar = "#" * int(share * 30)
    sys.stderr.write(f"\r[{bar:<30}] {share:6.1%} {lines:,} lines")
    sys.stderr.flush()


def replay_json(pipeline: Pipeline) -> dict[str, Any]:
    agg = pipeline.aggregates
    rejected_by_reason: dict[str, int] = {}
    for (_month, reason), count in sorted(agg.rejected.items()):
        rejected_by_reason[reason] = rejected_by_reason.get(reason, 0) + count
    return {"months": agg.month_totals(), "rejected_by_reason": rejected_by_reason}


def _table(result: dict[str, Any]) -> str:
    rows = [
        ("requests", "requests", "{:,}"), ("duplicates", "duplicates", "{:,}"), ("rejected", "rejected", "{:,}"),
        ("unpriced", "unpriced", "{:,}"), ("tokens saved", "tokens_saved", "{:,}"),
        ("usd saved", "usd_saved", "${:,.4f}"), ("would-have-saved tokens", "would_have_saved_tokens", "{:,}"),
        ("would-have-saved usd", "would_have_saved_usd", "${:,.4f}"),
        ("fresh input tokens", "fresh_input_tokens", "{:,}"), ("cache read tokens", "cache_read_tokens", "{:,}"),
        ("cache write tokens", "cache_write_tokens", "{:,}"), ("output tokens", "output_tokens", "{:,}"),
        ("spend usd", "spend_usd", "${:,.4f}"), ("provider cache savings usd", "cache_savings_usd", "${:,.4f}"),
        ("cache hit rate", "cache_hit_rate", "{:.2%}"),
    ]
    months = result["months"]
    if not months:
        return "no records"
    names = list(months)
    width = max(len(label) for label, _, _ in rows)
    cols = [max(12, len(n)) for n in names]
    out = [" " * width + "  " + "  ".join(n.rjust(c) for n, c in zip(names, cols, strict=True))]
    for label, key, fmt in rows:
        cells = [fmt.format(months[n][key]).rjust(c) for n, c in zip(names, cols, strict=True)]
        out.append(label.ljust(width) + "  " + "  ".join(cells))
    if result["rejected_by_reason"]:
        out.append("rejected by reason: " + ", ".join(f"{k}={v}" for k, v in result["rejected_by_reason"].items()))
    return "\n".join(out)


def run_replay(args: argparse.Namespace) -> int:
    try:
        prices = load_price_table(args.prices)
    except PriceTableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        decoder = make_line_decoder(args.format, args.mapping)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in args.files:
        if path != "-" and not os.path.isfile(path):
            print(f"error: {path}: no such file", file=sys.stderr)
            return 2
    pipeline = Pipeline(prices, timezone=args.timezone, dedupe_window_days=args.dedupe_window_days,
                        counter=decoder.counter)
    replay_files(args.files, pipeline, decoder, progress=not args.json and sys.stderr.isatty(),
                 max_line_bytes=args.max_line_bytes)
    result = replay_json(pipeline)
    if args.json:
        print(json.dumps(result, indent=None, sort_keys=False))
    else:
        print(_table(result))
    return 0
