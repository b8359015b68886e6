"""``calibrate``: level ratios and delta factors (``billed_token_factor``) from canonical records, by tokenizer.

The arithmetic, the safeguards and the ``billed_before``/``billed_after``
record extension it reads are in ``exporter.report.calibration``; the interval
and the verdict in ``exporter.report.factor_stats``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from exporter.prices.table import PriceTableError, load_price_table
from exporter.report.calibration import LEVEL_VS_DELTA_WARNING, calibrate_files
from exporter.report.factor_stats import DEFAULT_CONFIDENCE, MIN_EFFECTIVE_N


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "calibrate",
        help="delta factors (billed_token_factor) by tokenizer, and level ratios, from canonical JSONL records",
        description="Reads canonical JSONL records; prints, by tokenizer (the price table's model-level "
        "tokenizer key), the level ratio provider/counted per population and, from records with "
        "billed_before/billed_after (the input tokens billed for each arm, as the provider's response "
        "usage reports them: the bill is the truth, a count-tokens endpoint is not), the delta factor with "
        "its effective n and interval. Rows with cache reads and repeated request ids are excluded and "
        f"counted. A factor is suggested only from an effective n of {MIN_EFFECTIVE_N} (--min-n) with an "
        "interval that excludes 1.0; otherwise the verdict is 'no correction'. " + LEVEL_VS_DELTA_WARNING,
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="canonical JSONL files")
    p.add_argument(
        "--prices", metavar="FILE", help="price table for tokenizer keys and families (default: the bundled one)"
    )
    p.add_argument("--min-n", type=float, default=MIN_EFFECTIVE_N, metavar="N",
                   help=f"smallest effective n to suggest a factor from (default {MIN_EFFECTIVE_N})")
    p.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE, metavar="C",
                   help=f"two-sided interval level, between 0 and 1 (default {DEFAULT_CONFIDENCE})")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    missing = [p for p in args.files if not Path(p).is_file()]
    if missing:
        print(f"calibrate: no such file: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    if not 0.0 < args.confidence < 1.0:
        print(f"calibrate: --confidence: expected a number between 0 and 1, got {args.confidence:g}",
              file=sys.stderr)
        return 2
    if not args.min_n >= 1:
        print(f"calibrate: --min-n: expected at least 1, got {args.min_n:g}", file=sys.stderr)
        return 2
    try:
        table = load_price_table(args.prices)
    except PriceTableError as exc:
        print(f"calibrate: {exc}", file=sys.stderr)
        return 2
    report = calibrate_files((Path(p) for p in args.files), table, args.min_n, args.confidence)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_calibrate(report)
    return 0


def _print_calibrate(report: Mapping[str, Any]) -> None:
    r = report["records"]
    excluded = ", ".join(f"{reason} {n}" for reason, n in r["excluded"].items())
    print(
        f"records: {r['lines']} lines, {r['rejected']} rejected, excluded: {excluded}; "
        f"{r['without_request_id']} without a request id (kept); "
        f"{r['used_for_level_ratio']} with a level ratio, "
        f"{r['used_for_delta_factor']} with a delta factor"
    )
    print("\nlevel ratio = provider prompt tokens / counted tokens_after (by tokenizer)")
    print(
        f"{'tokenizer':<28}{'method':<24}{'population':<11}{'n':>6}{'sums':>8}"
        f"{'mean':>8}{'median':>8}{'p10':>8}{'p90':>8}"
    )
    for lv in report["level_ratios"]:
        sums = "n/a" if lv["ratio_of_sums"] is None else f"{lv['ratio_of_sums']:.3f}"
        print(
            f"{lv['tokenizer']:<28}{lv['count_method']:<24}{lv['population']:<11}{lv['n']:>6}{sums:>8}"
            f"{lv['mean']:>8.3f}{lv['median']:>8.3f}{lv['p10']:>8.3f}{lv['p90']:>8.3f}"
        )
    print("\ndelta factor f = Σ(billed_before − billed_after) / Σ(tokens_before − tokens_after)")
    if not report["delta_factors"]:
        print("  none: no records carry billed_before/billed_after")
    for d in report["delta_factors"]:
        interval = "n/a" if d["interval"] is None else f"{d['interval'][0]:.3f}..{d['interval'][1]:.3f}"
        print(
            f"  {d['tokenizer']:<28}{d['count_method']:<24}n={d['n']:<6} effective n={d['effective_n']:<7.1f}"
            f" f={d['factor']:.3f}  {report['confidence']:.0%} interval {interval}"
        )
        print(f"  {'':<28}{d['verdict']}")
        print(f"  {'':<28}models: {', '.join(d['models'])}")
        for family, now in d["table_factors"].items():
            print(f"  {'':<28}price table now: {family} {now['factor']:.3f} ({now['source']})")
    print("\n" + report["suggested_yaml"])
    print("Note: " + report["warning"])
