"""``count``: one text's exact counts next to the chars/4 and bytes/4 estimates."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from exporter.cli.encoding_files import add_encoding_file, counter_from
from exporter.tokens.encodings import INSTALL_HINT, method_for
from exporter.tokens.verify import ENCODING_NAMES, count_report


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "count",
        help="count one text exactly (tiktoken) and by the chars/4 and bytes/4 estimates",
        description="Characters, bytes, exact tiktoken counts and the chars/4 and bytes/4 "
        "estimates of TEXT (or standard input for '-' or none). Offline.",
    )
    p.add_argument("text", nargs="?", metavar="TEXT", help="the text, or - for standard input")
    p.add_argument("--encoding", choices=ENCODING_NAMES, help="only this encoding (default: both)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_encoding_file(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    text: str = sys.stdin.read() if args.text in (None, "-") else args.text
    encodings = (args.encoding,) if args.encoding else ENCODING_NAMES
    result = count_report(counter_from(args), text, encodings)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        _print_count(result, [method_for(name) for name in encodings])
    return 0


def _print_count(result: dict[str, Any], exact_methods: list[str]) -> None:
    counts: dict[str, int | None] = result["counts"]
    exact = {method: counts[method] for method in exact_methods}
    reference = next((m for m in exact if exact[m] is not None), None)
    print(f"{'characters':<24}{result['characters']:>10}")
    print(f"{'bytes (UTF-8)':<24}{result['bytes']:>10}")
    for method, n in counts.items():
        if n is None:
            print(f"{method:<24}{'unavailable':>10}  ({INSTALL_HINT})")
            continue
        note = ""
        ref_n = exact.get(reference) if reference else None
        if reference and method != reference and ref_n:
            note = f"  {100 * (n - ref_n) / ref_n:+.1f}% vs {reference}"
        print(f"{method:<24}{n:>10}{note}")
