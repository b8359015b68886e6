"""``verify``: chars/4, bytes/4 and tiktoken side by side on the packaged corpus."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from exporter.cli.encoding_files import add_encoding_file, counter_from
from exporter.tokens.verify import REFERENCES, VERIFY_METHODS, VERIFY_SCOPE, verify_report


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "verify",
        help="compare chars/4, bytes/4 and tiktoken on the packaged corpus",
        description="Counts the packaged corpus (prose, structured data, code, multilingual "
        "text, tool output) with every method and prints the differences. " + VERIFY_SCOPE + ".",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--strict", action="store_true", help="exit 1 when an encoding is unavailable")
    add_encoding_file(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = verify_report(counter_from(args))
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        _print_verify(report)
    return 1 if args.strict and report["status"] != "ok" else 0


def _fmt_rel(cell: Mapping[str, Any] | None) -> str:
    if cell is None or cell.get("rel_diff") is None:
        return "n/a"
    return f"{cell['diff_tokens']:+d} ({100 * cell['rel_diff']:+.1f}%)"


def _print_verify(report: Mapping[str, Any]) -> None:
    print(f"verify: {report['scope']}")
    print(f"corpus sha256 {report['corpus']['sha256'][:16]}…  status: {report['status']}")
    for method, info in report["unavailable"].items():
        print(f"  {method} unavailable: {info['reason']}\n    install: {info['hint']}")
    header = f"{'class':<14}{'chars':>7}" + "".join(f"{m:>22}" for m in VERIFY_METHODS)
    print(header)
    rows = [*report["classes"].items(), ("overall", report["overall"])]
    for name, row in rows:
        cells = "".join(
            f"{'n/a' if row['counts'][m] is None else row['counts'][m]:>22}" for m in VERIFY_METHODS
        )
        print(f"{name:<14}{row['characters']:>7}{cells}")
    for ref in REFERENCES:
        print(f"\ndifference against {ref} (tokens, relative):")
        others = [m for m in VERIFY_METHODS if m != ref]
        print(f"{'class':<14}" + "".join(f"{m:>26}" for m in others))
        for name, row in rows:
            print(f"{name:<14}" + "".join(f"{_fmt_rel(row['vs'][ref][m]):>26}" for m in others))
