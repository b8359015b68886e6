"""Command line entry point.

One module per command under ``exporter/cli/``; each exposes
``register(subparsers)``, which adds its parser and sets ``func`` to its handler
``run(args) -> int``. A handler only parses arguments, calls one function of the
layer below (``sidecar``, ``replay``, ``demo``, ``tokens``, ``prices``), prints
and returns the exit code. Modules are imported lazily by name so a broken
optional piece cannot take the whole CLI down.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from exporter import __version__

# Order is the order of `--help`.
SUBCOMMAND_MODULES: tuple[str, ...] = (
    "exporter.cli.demo",
    "exporter.cli.run",
    "exporter.cli.replay",
    "exporter.cli.report",
    "exporter.cli.backfill",
    "exporter.cli.count",
    "exporter.cli.verify",
    "exporter.cli.calibrate",
    "exporter.cli.prices",  # prices validate|show|import-litellm
)
# The module of each command: ``main`` imports only that one (a shorter start for `replay` in scripts).
COMMAND_MODULES = {"demo": "exporter.cli.demo", "run": "exporter.cli.run", "replay": "exporter.cli.replay",
                   "report": "exporter.cli.report",
                   "backfill": "exporter.cli.backfill",
                   "count": "exporter.cli.count", "verify": "exporter.cli.verify",
                   "calibrate": "exporter.cli.calibrate", "prices": "exporter.cli.prices"}


def build_parser(modules: Sequence[str] = SUBCOMMAND_MODULES) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="llm-savings-exporter",
        description="Publish what an LLM gateway saves, with provenance, as Prometheus counters.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in modules:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue  # not built yet
            raise
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = COMMAND_MODULES.get(argv[0]) if argv else None
    parser = build_parser((command,) if command else SUBCOMMAND_MODULES)
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
