"""``replay FILE…``: the month-to-date totals the counters would hold for these files, no server."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from exporter.cli.log_inputs import add_log_arguments, open_log_inputs
from exporter.engine.pipeline import Pipeline
from exporter.replay.replay import explain_rejects, replay, replay_pipeline


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="print the month-to-date totals the counters would hold for these files",
        description="Replay request logs through the full arithmetic and print month-to-date totals.",
    )
    add_log_arguments(parser, "JSON-lines logs ('-' for stdin)")
    parser.add_argument("--jobs", type=int, default=0, metavar="N",
                        help="processes counting disjoint parts of big inputs (default: one per CPU; 1: one pass). "
                             "The result is always the one-pass result")
    parser.add_argument("--json", action="store_true", help="print the totals as JSON")
    parser.add_argument("--explain-rejects", nargs="?", type=int, const=100, default=None, metavar="N",
                        help="list rejected lines as FILE:OFFSET: REASON (the first N, default 100, then the "
                             "total) instead of the totals; never the lines' content")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    inputs = open_log_inputs(args)
    if inputs is None:
        return 2
    prices, decoder = inputs
    if args.jobs < 0:
        print("error: --jobs must be 0 (one per CPU) or more", file=sys.stderr)
        return 2
    if args.explain_rejects is not None:
        def make_pipeline() -> Pipeline:
            return replay_pipeline(prices, decoder, args.timezone, args.dedupe_window_days)

        listed, total = explain_rejects(args.files, make_pipeline, max(0, args.explain_rejects), decoder,
                                        args.max_line_bytes)
        for entry in listed:
            print(f"{entry.path}:{entry.offset}: {entry.reason}")
        more = f" ({total - len(listed)} more not listed)" if total > len(listed) else ""
        print(f"{total} rejected line(s){more}")
        return 0
    progress = not args.json and sys.stderr.isatty()
    result = replay(args.files, prices, decoder, timezone=args.timezone,
                    dedupe_window_days=args.dedupe_window_days, max_line_bytes=args.max_line_bytes,
                    jobs=args.jobs, progress=progress)
    if args.json:
        print(json.dumps(result, indent=None, sort_keys=False))
    else:
        print(_table(result))
    return 0


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
        ("baseline input tokens", "baseline_input_tokens", "{:,}"), ("sent input tokens", "sent_input_tokens", "{:,}"),
        ("saved %", "saved_pct", "{:.2%}"), ("compression ratio", "compression_ratio", "{:.3f}x"),
        ("optimizer spend usd", "optimizer_spend_usd", "${:,.4f}"), ("net usd saved", "net_usd_saved", "${:,.4f}"),
    ]
    months = result["months"]
    if not months:
        return "no records"
    names = list(months)
    width = max(len(label) for label, _, _ in rows)
    cols = [max(12, len(n)) for n in names]
    out = [" " * width + "  " + "  ".join(n.rjust(c) for n, c in zip(names, cols, strict=True))]
    for label, key, fmt in rows:
        cells = [("-" if months[n][key] is None else fmt.format(months[n][key])).rjust(c)  # None: no baseline
                 for n, c in zip(names, cols, strict=True)]
        out.append(label.ljust(width) + "  " + "  ".join(cells))
    if result["rejected_by_reason"]:
        out.append("rejected by reason: " + ", ".join(f"{k}={v}" for k, v in result["rejected_by_reason"].items()))
    return "\n".join(out)
