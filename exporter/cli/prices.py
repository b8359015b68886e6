"""`prices list|validate|show|import-litellm`: inspect and produce price tables.

Thin I/O around ``exporter.prices.table`` (loader), ``exporter.prices.explain``
(every model ``list`` prints, what ``validate`` reports, and where every rate
``show`` prints came from: the table, a family multiplier, or the input rate
when nothing else is listed) and ``exporter.prices.importers.litellm`` (conversion).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import orjson

from exporter.prices.explain import describe_table, explain, list_models
from exporter.prices.importers.litellm import LiteLLMImportError, convert
from exporter.prices.table import (
    BUNDLED_PRICES,
    PriceTable,
    PriceTableError,
    load_price_table,
    parse_price_table,
)
from exporter.sidecar.config import ConfigError, load_config


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "prices",
        help="validate, inspect or import price tables",
        description="Validate, inspect or import versioned price tables (USD per million tokens).",
    )
    sub = parser.add_subparsers(dest="prices_command", metavar="SUBCOMMAND")

    listing = sub.add_parser("list", help="every model of a table: provider, family, versions, rates, aliases")
    listing.add_argument("--prices", metavar="FILE", help="price table (default: the bundled one)")
    listing.add_argument("--at", metavar="TS",
                         help="only the version in force at this RFC 3339 time or epoch (default: every "
                              "model of any version, at the rates of the newest version listing it)")
    listing.add_argument("--json", action="store_true", help="print JSON")

    validate = sub.add_parser("validate", help="check a price table (default: the bundled one, or the "
                                               "config's); exit 1 naming file, line, key")
    validate.add_argument("file", metavar="FILE", nargs="?", help="price table YAML (default: the bundled table)")
    validate.add_argument("--config", metavar="FILE", help="check the table this sidecar config names")
    validate.add_argument("--json", action="store_true", help="print JSON")

    show = sub.add_parser("show", help="a model's rates at a time, and where each came from")
    show.add_argument("model", metavar="MODEL",
                      help="model name as the gateway logs it (aliases resolve)")
    show.add_argument("--at", metavar="TS", help="RFC 3339 time or epoch seconds (default: now)")
    show.add_argument("--prices", metavar="FILE", help="price table (default: the bundled one)")
    show.add_argument("--provider", help="provider, for provider-qualified names (e.g. bedrock)")
    show.add_argument("--json", action="store_true", help="print JSON")

    imp = sub.add_parser("import-litellm",
                         help="convert LiteLLM's model_prices_and_context_window.json")
    imp.add_argument("file", metavar="FILE", help="LiteLLM price JSON ('-' for stdin)")
    imp.add_argument("--version", dest="table_version", metavar="V",
                     help="version label (default: litellm-<today>)")
    imp.add_argument("--effective-from", metavar="TS", default="2024-01-01T00:00:00Z",
                     help="RFC 3339 start of the version (default 2024-01-01T00:00:00Z, so older "
                          "traffic is priced)")
    imp.add_argument("--retrieved", metavar="DATE",
                     help="retrieval date to record (default: today)")
    imp.add_argument("-o", "--output", metavar="OUT", help="write here (default: stdout)")

    gen = sub.add_parser("import-genai-prices",
                         help="convert the price data of the installed genai-prices package (extra: genai-prices)")
    gen.add_argument("--out", metavar="FILE", help="write here (default: stdout)")
    gen.add_argument("--provider", action="append", metavar="ID",
                     help="only this genai-prices provider id (repeatable; default: every provider)")
    gen.add_argument("--since", metavar="DATE",
                     help="only the versions from this day (YYYY-MM-DD), the first with the prices in force "
                          "then; older traffic is unpriced (default: the whole history)")
    gen.add_argument("--names", metavar="FILE",
                     help="extra model names the import checks its match rules on, one per line (e.g. from your "
                          "gateway's logs)")

    parser.set_defaults(func=run, prices_parser=parser)


def run(args: argparse.Namespace) -> int:
    """Run the chosen subcommand; without one, the usage on stderr and exit code 2."""
    handler = SUBCOMMANDS.get(args.prices_command)
    if handler is None:
        args.prices_parser.print_help(sys.stderr)
        return 2
    return handler(args)


# ---------------------------------------------------------------------------
# validate


def _validate_target(args: argparse.Namespace) -> tuple[Path, str] | str:
    """The table to check and how it was chosen, or an error message."""
    if args.file and args.config:
        return "give a FILE or --config, not both"
    if args.file:
        return Path(args.file), "given"
    if args.config:
        try:
            config = load_config(args.config)
        except ConfigError as exc:
            return f"--config: {exc}"
        if config.prices is None:
            return BUNDLED_PRICES, f"the bundled table (named by {config.origin}: no prices key)"
        return Path(config.prices), f"named by {config.origin}"
    return BUNDLED_PRICES, "the bundled table"


def _load_or_say(path: Path) -> PriceTable | None:
    """The table at ``path``, or None after printing why it was refused (the commands exit 1)."""
    try:
        return load_price_table(path)
    except PriceTableError as exc:
        print(str(exc), file=sys.stderr)
        return None


def run_validate(args: argparse.Namespace) -> int:
    target = _validate_target(args)
    if isinstance(target, str):
        print(f"prices validate: {target}", file=sys.stderr)
        return 2
    path, chosen = target
    table = _load_or_say(path)
    if table is None:
        return 1
    info = describe_table(table)
    if args.json:
        print(json.dumps({"ok": True, "chosen": chosen, **info}, indent=2))
        return 0
    versions = info["versions"]
    print(f"{table.path}: ok ({chosen})")
    print(f"  sha256     {table.sha256}")
    print(f"  versions   {len(versions)}")
    for v in versions:
        print(f"             {v['version']:<12} from {v['effective_from']}, {v['models']} models")
    print(f"  models     {info['models']} in the newest version, {info['aliases']} aliases "
          f"({info['model_entries']} model entries over all versions)")
    missing = info["without_tokenizer"]
    print(f"  tokenizer  {info['tokenizer_keys']} of {info['models']} models have a tokenizer key"
          + (f"; without: {', '.join(missing[:6])}{', ...' if len(missing) > 6 else ''}" if missing else ""))
    for warning in info["warnings"]:
        print(f"  warning    {warning}")
    return 0


# ---------------------------------------------------------------------------
# list


def _rate(value: float) -> str:
    return f"{value:.6g}"


def run_list(args: argparse.Namespace) -> int:
    table = _load_or_say(Path(args.prices) if args.prices else BUNDLED_PRICES)
    if table is None:
        return 1
    try:
        at = None if args.at is None else _parse_at(args.at)
    except ValueError:
        print(f"--at: expected an RFC 3339 time or epoch seconds, got {args.at!r}", file=sys.stderr)
        return 2
    rows = list_models(table, at)
    if args.json:
        print(json.dumps({"table": table.path, "sha256": table.sha256,
                          "versions": [v.version for v in table.versions], "models": rows}, indent=2))
        return 0
    scope = "every version" if at is None else f"the version in force at {args.at}"
    print(f"{table.path} sha256 {table.sha256[:12]}: {len(rows)} models ({scope}); USD per million tokens")
    width = max([len(row["model"]) for row in rows] + [5])
    print(f"{'model':<{width}}  {'provider/family':<20} {'versions':<40} {'input':>8} {'output':>8} "
          f"{'cache_rd':>8} {'write5m':>8} {'write1h':>8} {'aliases':>7}  tokenizer")
    for row in rows:
        names = row["versions"]
        versions = names[0] if len(names) == 1 else f"{names[0]}..{names[-1]} ({len(names)})"
        if row["rate_changes"]:
            versions += f" {row['rate_changes']}x new rates"
        owner = f"{row['provider'] or '-'}/{row['family'] or '-'}"
        r = row["rates"]
        print(f"{row['model']:<{width}}  {owner:<20} {versions:<40} {_rate(r['input']):>8} {_rate(r['output']):>8} "
              f"{_rate(r['cache_read']):>8} {_rate(r['cache_write_5m']):>8} {_rate(r['cache_write_1h']):>8} "
              f"{row['aliases']:>7}  {row['tokenizer'] or '-'}")
    return 0


# ---------------------------------------------------------------------------
# show


def _parse_at(text: str | None) -> float:
    if text is None:
        return time.time()
    try:
        return float(text)
    except ValueError:
        pass
    moment = datetime.fromisoformat(text.strip())
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _print_explanation(info: dict[str, Any]) -> None:
    if "unpriced" in info:
        print(f"{info['query']!r} is unpriced at {info['at']}: {info['unpriced']}")
        if info.get("did_you_mean"):
            print("  did you mean: " + ", ".join(info["did_you_mean"]))
        if "first_version_from" in info:
            print(f"  the table starts at {info['first_version_from']}")
        return
    print(f"{info['query']} -> {info['model']} ({info['resolved_by']})")
    print(f"  version   {info['version']} (effective from {info['effective_from']})")
    if info["version_source"]:
        print(f"            {info['version_source']}")
    print(f"  family    {info['family'] or '(none)'}")
    for key, value in sorted(info["meta"].items()):
        print(f"  {key:<9} {value}")
    print("  rates, USD per million tokens:")
    for key, rate in info["rates"].items():
        print(f"    {key:<15} {rate['usd_per_million']:>12.6g}   {rate['origin']}")
    factors = info["billed_token_factors"]
    if factors:
        print("  billed-token factors (provider tokens per counted token):")
        for method, factor in factors.items():
            print(f"    {method:<24} {factor:g}")
    else:
        print("  billed-token factors: none (other count methods get factor 1.0, 'default')")
    if "v2" in info:
        _print_tiers(info["v2"])
    print(f"  table     {info['table']} sha256 {info['table_sha256'][:12]}")


def _rates_text(rates: dict[str, float]) -> str:
    return " ".join(f"{key}={value:g}" for key, value in rates.items())


def _print_tiers(v2: dict[str, Any]) -> None:
    """A v2 model's prompt tiers, service tiers and windows (their final rates, USD per million)."""
    for tier in v2["tiers"]:
        print(f"  prompt > {tier['above']} tokens (whole request): {_rates_text(tier['rates'])}")
    for name, found in v2["service_tiers"].items():
        print(f"  service tier {name}: {_rates_text(found['rates'])}")
        for tier in found["tiers"]:
            print(f"    prompt > {tier['above']} tokens: {_rates_text(tier['rates'])}")
    for window in v2["time_windows"]:
        how = f"x{window['multiplier']:g}" if window["multiplier"] is not None else _rates_text(window["rates"])
        print(f"  window {window['name']}: {window['start']}-{window['end']} {window['zone']}: {how}")


def run_show(args: argparse.Namespace) -> int:
    path = Path(args.prices) if args.prices else BUNDLED_PRICES
    table = _load_or_say(path)
    if table is None:
        return 1
    try:
        ts = _parse_at(args.at)
    except ValueError:
        print(f"--at: expected an RFC 3339 time or epoch seconds, got {args.at!r}", file=sys.stderr)
        return 2
    info = explain(table, args.model, ts, args.provider, path)
    if args.json:
        print(json.dumps(info, indent=2, sort_keys=True))
    else:
        _print_explanation(info)
    return 1 if "unpriced" in info else 0


# ---------------------------------------------------------------------------
# import-litellm


def run_import_litellm(args: argparse.Namespace) -> int:
    try:
        raw = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as exc:
        print(f"{args.file}: cannot read: {exc.strerror}", file=sys.stderr)
        return 1
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        print(f"{args.file}: not JSON: {exc}", file=sys.stderr)
        return 1
    today = datetime.now(UTC).date().isoformat()
    version = args.table_version or f"litellm-{today}"
    source = f"LiteLLM model_prices_and_context_window.json ({Path(args.file).name})"
    try:
        result = convert(data, version=version, effective_from=args.effective_from, source=source,
                         retrieved=args.retrieved or today)
    except LiteLLMImportError as exc:
        print(f"{args.file}: {exc}", file=sys.stderr)
        return 1
    destination = args.output or "<stdout>"
    table = _validated_write(result.text, args.output)  # e.g. a bad --effective-from or --version is refused
    if table is None:
        return 1
    print(result.summary(), file=sys.stderr)
    print(f"wrote {destination}: version {table.newest.version}, effective from "
          f"{table.newest.effective_from_text}", file=sys.stderr)
    return 0


def _validated_write(text: str, output: str | None, hint: str = "") -> PriceTable | None:
    """An importer's table, loaded by the sidecar's own loader before it is written to ``output`` (or stdout);
    None, with the loader's error on stderr, when it does not validate."""
    try:
        table = parse_price_table(text, output or "<stdout>")
    except PriceTableError as exc:
        print(f"the converted table does not validate: {exc}{hint}", file=sys.stderr)
        return None
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return table


def run_import_genai_prices(args: argparse.Namespace) -> int:
    try:
        import genai_prices
        from genai_prices import data_snapshot
    except ImportError:
        print("import-genai-prices needs the genai-prices package: pip install 'llm-savings-exporter[genai-prices]'",
              file=sys.stderr)
        return 1
    from exporter.prices.importers.genai_prices import GenaiPricesImportError, genai_resolver
    from exporter.prices.importers.genai_prices import convert as convert_genai

    extra: list[str] = []
    if args.names:
        try:
            extra = Path(args.names).read_text(encoding="utf-8").split()
        except (OSError, UnicodeDecodeError) as exc:
            print(f"--names {args.names}: cannot read: {exc}", file=sys.stderr)
            return 1
    try:
        since = None if args.since is None else date.fromisoformat(args.since)
    except ValueError:
        print(f"--since: expected a date YYYY-MM-DD, got {args.since!r}", file=sys.stderr)
        return 2
    snapshot = data_snapshot.get_snapshot()
    providers = [p for p in snapshot.providers if not args.provider or p.id in args.provider]
    unknown = sorted(set(args.provider or ()) - {p.id for p in providers})
    if unknown:
        print(f"--provider: unknown genai-prices provider {', '.join(unknown)} "
              f"(known: {', '.join(p.id for p in snapshot.providers)})", file=sys.stderr)
        return 2
    try:
        result = convert_genai(providers, genai_resolver(snapshot), source=f"genai-prices {genai_prices.__version__}",
                               extra_names=extra, since=since)
    except GenaiPricesImportError as exc:
        print(f"genai-prices: {exc}", file=sys.stderr)
        return 1
    destination = args.out or "<stdout>"
    # e.g. more values than the loader's guard: choose providers
    table = _validated_write(result.text, args.out, " (import fewer: --provider, --since)")
    if table is None:
        return 1
    print(result.summary(), file=sys.stderr)
    print(f"wrote {destination}: {len(table.versions)} versions, newest {table.newest.version}", file=sys.stderr)
    return 0


SUBCOMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "list": run_list,
    "validate": run_validate,
    "show": run_show,
    "import-litellm": run_import_litellm,
    "import-genai-prices": run_import_genai_prices,
}
