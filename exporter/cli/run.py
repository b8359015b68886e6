"""``run --config FILE [--listen HOST:PORT]``: the sidecar, until SIGTERM or SIGINT (final checkpoint).

The process_* metrics come from prometheus_client's ``ProcessCollector``, made
here without a registry and passed to the sidecar (no global registry).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import time
from dataclasses import replace
from typing import Any

from prometheus_client import ProcessCollector

from exporter.prices.table import PriceTableError, load_price_table
from exporter.sidecar.checkpoint import CheckpointError
from exporter.sidecar.config import ConfigError, load_config, parse_listen
from exporter.sidecar.sidecar import Sidecar

# The sidecar's own logger: a start that fails logs under the same name as the sidecar does.
log = logging.getLogger("exporter.sidecar.sidecar")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("run", help="run the sidecar (tail, checkpoint, serve /metrics)",
                                   description="Run the sidecar from a YAML config file.")
    parser.add_argument("--config", required=True, metavar="FILE", help="YAML config (llm-savings-config/v1)")
    parser.add_argument("--listen", metavar="HOST:PORT",
                        help="serve /metrics here, overriding the config's listen and LLM_SAVINGS_LISTEN")
    parser.add_argument("--check-config", action="store_true", help="validate config and prices, then exit")
    parser.set_defaults(func=run)


def setup_logging(level: str) -> None:
    """Log lines on stderr, UTC timestamps, at the config's level."""
    logging.basicConfig(level=getattr(logging, level.upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    logging.Formatter.converter = time.gmtime


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.listen is not None:
        try:
            parse_listen(args.listen)
        except ValueError as exc:
            print(f"error: --listen: {exc}", file=sys.stderr)
            return 2
        config = replace(config, listen=args.listen)
    setup_logging(config.log_level)
    if args.check_config:
        try:
            load_price_table(config.prices)
        except PriceTableError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"ok: {config.origin}")
        return 0
    # until run_until_signalled installs its handlers: a SIGHUP while the checkpoint loads must not kill us
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        sidecar = Sidecar(config, process_collector=ProcessCollector(registry=None))
    except (PriceTableError, CheckpointError, ConfigError) as exc:
        log.error("%s", exc)
        return 2
    except OSError as exc:
        log.error("cannot start (listen %s): %s", config.listen, exc)
        return 2
    return sidecar.run_until_signalled()
