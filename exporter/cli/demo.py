"""``demo``: simulated gateway traffic through the real sidecar, with a live summary."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from exporter.demo.demo import DemoError, DemoOptions, run_demo


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="simulated gateway traffic through the real sidecar, with a live summary",
        description=(
            "Write a realistic gateway log with the bundled simulator, tail it with the bundled "
            "price table, serve /metrics and print a live month-to-date summary."
        ),
    )
    parser.add_argument(
        "--port", type=int, default=9464, help="metrics port (default 9464; 0 = any free port)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="metrics address (default 127.0.0.1)")
    parser.add_argument(
        "--rate", type=float, default=50.0, help="simulated requests per second (default 50)"
    )
    parser.add_argument(
        "--duration", type=float, metavar="SECONDS", help="stop by itself after this long"
    )
    parser.add_argument(
        "--dir",
        metavar="DIR",
        help="keep the log and the state here (default: a temporary directory, removed at exit)",
    )
    parser.add_argument("--no-summary", action="store_true", help="do not print the live summary")
    parser.add_argument("--seed", type=int, help="simulator seed (default: from the clock)")
    parser.add_argument(
        "--rotate-every",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="rotate the log this often (default 300)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.rate <= 0:
        print("error: --rate must be positive", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    options = DemoOptions(
        host=args.host,
        port=args.port,
        rate=args.rate,
        duration=args.duration,
        directory=args.dir,
        no_summary=args.no_summary,
        seed=args.seed,
        rotate_every=args.rotate_every,
    )
    try:
        return run_demo(options)
    except DemoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
