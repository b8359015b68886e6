"""``calibrate``: level ratios and delta factors (``billed_token_factor``) from canonical records.

The arithmetic, and the ``billed_before``/``billed_after`` record extension it
reads, are in ``exporter.report.calibration``.
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


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "calibrate",
        help="level ratios and delta factors (billed_token_factor) from canonical JSONL records",
        description="Reads canonical JSONL records; prints the level ratio provider/counted per "
        "family and population and, from records with billed_before/billed_after, the delta "
        "factor to put in the price table. " + LEVEL_VS_DELTA_WARNING,
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="canonical JSONL files")
    p.add_argument(
        "--prices", metavar="FILE", help="price table for model families (default: the bundled one)"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    missing = [p for p in args.files if not Path(p).is_file()]
    if missing:
        print(f"calibrate: no such file: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    try:
        table = load_price_table(args.prices)
    except PriceTableError as exc:
        print(f"calibrate: {exc}", file=sys.stderr)
        return 2
    report = calibrate_files((Path(p) for p in args.files), table)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_calibrate(report)
    return 0


def _print_calibrate(report: Mapping[str, Any]) -> None:
    r = report["records"]
    print(
        f"records: {r['lines']} lines, {r['rejected']} rejected, "
        f"{r['used_for_level_ratio']} with a level ratio, "
        f"{r['used_for_delta_factor']} with a delta factor"
    )
    print("\nlevel ratio = provider prompt tokens / counted tokens_after")
    print(
        f"{'family':<12}{'method':<24}{'population':<11}{'n':>6}{'sums':>8}"
        f"{'mean':>8}{'median':>8}{'p10':>8}{'p90':>8}"
    )
    for lv in report["level_ratios"]:
        sums = "n/a" if lv["ratio_of_sums"] is None else f"{lv['ratio_of_sums']:.3f}"
        print(
            f"{lv['family']:<12}{lv['count_method']:<24}{lv['population']:<11}{lv['n']:>6}{sums:>8}"
            f"{lv['mean']:>8.3f}{lv['median']:>8.3f}{lv['p10']:>8.3f}{lv['p90']:>8.3f}"
        )
    print("\ndelta factor f = Σ(billed_before − billed_after) / Σ(tokens_before − tokens_after)")
    if not report["delta_factors"]:
        print("  none: no records carry billed_before/billed_after")
    for d in report["delta_factors"]:
        pr = d["per_record"]
        print(
            f"  {d['family']:<12}{d['count_method']:<24}n={d['n']:<6} f={d['factor']:.3f}"
            f"  per-record median {pr['median']:.3f}, p10..p90 {pr['p10']:.3f}..{pr['p90']:.3f}"
        )
        if d["table_factor"] is not None:
            print(
                f"  {'':<36}price table now: {d['table_factor']:.3f} ({d['table_factor_source']})"
            )
    print("\n" + report["suggested_yaml"])
    print("Note: " + report["warning"])
