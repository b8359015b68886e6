"""What ``calibrate`` computes: level ratios and delta factors from canonical records.

Reads canonical JSONL records (docs/record-format.md) and reports two different
numbers, which must not be confused:

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

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from exporter.engine.records import Record, parse_object
from exporter.prices.table import PricedModel, PriceTable

CALIBRATE_SCHEMA = "llm-savings-calibrate/v1"
LEVEL_VS_DELTA_WARNING = (
    "A level ratio (provider prompt tokens / counted tokens) is not a delta factor: it includes "
    "the chat template, system prompt, tool schemas and images that the proxy never counted, so "
    "multiplying saved tokens by it overstates (or understates) savings. Only a delta factor, "
    "measured from provider counts of both the before and the after prompt (billed_before / "
    "billed_after), belongs in billed_token_factor."
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
    """The calibration report (schema ``llm-savings-calibrate/v1``) of every line of ``paths``."""
    cal = Calibration(table=table)
    for path in paths:
        with open(path, "rb") as fh:
            for line in fh:
                cal.add_line(line)
    return cal.report()
