"""What ``calibrate`` computes: level ratios and delta factors from canonical records, by tokenizer.

Reads canonical JSONL records (docs/record-format.md) and reports two different
numbers, which must not be confused:

* the **level ratio** ``provider prompt tokens / counted tokens_after`` of
  records whose ``tokens_after`` was counted (``count_method`` not
  ``provider``) and that carry a usage block. It includes everything the
  provider bills that the proxy did not count (chat template, system prompt,
  tool schemas, images), so it is not a conversion factor for *saved* tokens;
  it is reported per population (``compacted``: before > after; ``untouched``:
  otherwise), as the exporter's divergence metric is.
* the **delta factor** ``f = Σ(billed_before − billed_after) / Σ(tokens_before −
  tokens_after)`` (a ratio of sums over records whose counted delta is
  positive), which is what ``billed_token_factor`` in the price table means.
  It needs the provider's billed count of both arms, carried by an extension
  of the canonical record defined here:

  ``billed_before``, ``billed_after`` — int ≥ 0, optional pair: the input
  tokens the provider *billed* for exactly the input that
  ``tokens_before``/``tokens_after`` counted, as the usage block of its
  response reports them (e.g. a shadow test sending both the original and the
  compacted prompt). The billed usage is the truth; a count-tokens endpoint is
  not a billing oracle (its counts are documented as estimates and can differ
  from what a request is billed), so its numbers do not belong here. Unknown
  keys are ignored by the exporter, so such records also replay normally.

Safeguards, each counted in the report's ``excluded``:

* a ``request_id`` seen before (a retry or a redelivered line) is excluded:
  the first wins, as in the exporter; records without an id are kept and
  counted (``without_request_id``);
* a record whose usage has cache reads (``cache_read`` > 0) is excluded: part
  of its prompt was served from the provider's cache, so its billed counts
  depend on what the cache held, not only on the text;
* a record counted by the provider itself (``count_method: provider``) has
  nothing to calibrate.

Groups are keyed by **tokenizer**, not by price family: the model-level
``tokenizer`` key of the price table (``--prices``, default the bundled table;
the version in force at the record's ``ts``). Models of one family can
tokenize differently (Claude haiku and sonnet do), and one factor for both
would be wrong for each. A model without a key is its own group
(``model:<name>``), never pooled. A factor is suggested only when the
effective n reaches the minimum and its interval excludes 1.0
(``exporter.report.factor_stats``); the suggested YAML says under which
family to put it, and when a family mixes tokenizers, which models need a
family of their own.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from exporter.engine.records import Record, parse_object
from exporter.engine.usage import MAX_COUNT
from exporter.prices.table import PricedModel, PriceTable
from exporter.report.calibration_yaml import family_advice, suggested_yaml
from exporter.report.factor_stats import DEFAULT_CONFIDENCE, MIN_EFFECTIVE_N, ratio_of_sums, verdict

CALIBRATE_SCHEMA = "llm-savings-calibrate/v2"
LEVEL_VS_DELTA_WARNING = (
    "A level ratio (provider prompt tokens / counted tokens) is not a delta factor: it includes "
    "the chat template, system prompt, tool schemas and images that the proxy never counted, so "
    "multiplying saved tokens by it overstates (or understates) savings. Only a delta factor, "
    "measured from the billed input tokens of both the before and the after prompt as the "
    "provider's responses report them (billed_before / billed_after), belongs in "
    "billed_token_factor; a count-tokens endpoint is an estimate, not the bill."
)
EXCLUSION_REASONS = ("duplicate_request_id", "cache_read", "provider_counted")

# Model-name prefix -> family, used when a record's model is not in the price table and has no provider.
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


class Placement(NamedTuple):
    """Where a record's factor is calibrated and where it would go in the table."""

    tokenizer: str  # the table's tokenizer key, else ``model:<name>``
    family: str  # the price family of the model ("" when the table gives it none)
    model: str  # the table's name of the model (the record's when unpriced)
    priced: bool


def placement_of(record: Record, table: PriceTable | None) -> Placement:
    """The tokenizer group of a record: from the model-level ``tokenizer`` key in force at its ``ts``."""
    if table is not None:
        version = table.version_at(record.ts)
        priced = version.resolve(record.model, record.provider) if version is not None else None
        if version is not None and priced is not None:
            key = version.tokenizer(priced.model) or f"model:{priced.model}"
            return Placement(key, priced.family, priced.model, True)
    return Placement(f"model:{record.model}", family_of(record.model, record.provider), record.model, False)


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
    families: set[str] = field(default_factory=set)
    models: set[str] = field(default_factory=set)


@dataclass
class _Delta:
    pairs: list[tuple[int, int]] = field(default_factory=list)  # (billed delta, counted delta) per row
    families: set[str] = field(default_factory=set)
    models: set[str] = field(default_factory=set)
    unpriced: bool = False
    table_factors: dict[str, tuple[float, str]] = field(default_factory=dict)  # family -> factor now


@dataclass
class Calibration:
    """Accumulates level ratios and delta factors, by tokenizer, from canonical records."""

    table: PriceTable | None = None
    min_effective_n: float = MIN_EFFECTIVE_N
    confidence: float = DEFAULT_CONFIDENCE
    levels: dict[tuple[str, str, str], _Level] = field(default_factory=lambda: defaultdict(_Level))
    deltas: dict[tuple[str, str], _Delta] = field(default_factory=lambda: defaultdict(_Delta))
    excluded: dict[str, int] = field(default_factory=lambda: dict.fromkeys(EXCLUSION_REASONS, 0))
    seen_ids: set[str] = field(default_factory=set)
    lines: int = 0
    rejected: int = 0
    without_request_id: int = 0
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
        if record.request_id is None:
            self.without_request_id += 1
        elif record.request_id in self.seen_ids:
            self.excluded["duplicate_request_id"] += 1
            return
        else:
            self.seen_ids.add(record.request_id)
        method = record.count_method or "unknown"
        if method == "provider":
            self.excluded["provider_counted"] += 1
            return
        if record.usage is not None and record.usage.cache_read > 0:
            self.excluded["cache_read"] += 1
            return
        where = placement_of(record, self.table)
        before, after = record.tokens_before, record.tokens_after
        if after is not None and after > 0 and record.usage is not None:
            population = "compacted" if before is not None and before > after else "untouched"
            prompt = record.usage.prompt_tokens
            level = self.levels[(where.tokenizer, method, population)]
            level.ratios.append(prompt / after)
            level.provider_sum += prompt
            level.counted_sum += after
            level.families.add(where.family)
            level.models.add(where.model)
            self.used_level += 1
        self._add_delta(obj, record, where, method)

    def _add_delta(self, obj: dict[str, Any], record: Record, where: Placement, method: str) -> None:
        bb, ba = obj.get("billed_before"), obj.get("billed_after")
        if bb is None and ba is None:
            return
        before, after = record.tokens_before, record.tokens_after
        if not (isinstance(bb, int) and isinstance(ba, int) and _is_count(bb) and _is_count(ba)) \
                or before is None or after is None or before <= after:
            self.skipped_billed += 1
            return
        delta = self.deltas[(where.tokenizer, method)]
        delta.pairs.append((bb - ba, before - after))
        delta.families.add(where.family)
        delta.models.add(where.model)
        delta.unpriced = delta.unpriced or not where.priced
        if self.table is not None and where.priced and where.family not in delta.table_factors:
            priced = self.table.lookup(record.model, record.ts, record.provider)
            if isinstance(priced, PricedModel):
                delta.table_factors[where.family] = priced.factor(method)
        self.used_delta += 1

    def report(self) -> dict[str, Any]:
        levels = [
            {
                "tokenizer": tokenizer,
                "count_method": method,
                "population": population,
                "families": sorted(lv.families),
                "models": sorted(lv.models),
                "n": len(lv.ratios),
                "ratio_of_sums": lv.provider_sum / lv.counted_sum if lv.counted_sum else None,
                **_spread(lv.ratios),
            }
            for (tokenizer, method, population), lv in sorted(self.levels.items())
        ]
        deltas = [self._delta_row(tokenizer, method, d) for (tokenizer, method), d in sorted(self.deltas.items())]
        return {
            "schema": CALIBRATE_SCHEMA,
            "records": {
                "lines": self.lines,
                "rejected": self.rejected,
                "excluded": dict(self.excluded),
                "without_request_id": self.without_request_id,
                "used_for_level_ratio": self.used_level,
                "used_for_delta_factor": self.used_delta,
                "billed_pair_unusable": self.skipped_billed,
            },
            "min_effective_n": self.min_effective_n,
            "confidence": self.confidence,
            "level_ratios": levels,
            "delta_factors": deltas,
            "suggested_yaml": suggested_yaml(deltas, levels),
            "warning": LEVEL_VS_DELTA_WARNING,
        }

    def _delta_row(self, tokenizer: str, method: str, d: _Delta) -> dict[str, Any]:
        estimate = ratio_of_sums(d.pairs, self.confidence)
        decision = verdict(estimate, self.min_effective_n)
        billed = sum(y for y, _ in d.pairs)
        counted = sum(x for _, x in d.pairs)
        return {
            "tokenizer": tokenizer,
            "count_method": method,
            "families": sorted(d.families),
            "models": sorted(d.models),
            "n": estimate.n,
            "effective_n": estimate.effective_n,
            "factor": estimate.ratio,
            "std_error": None if math.isinf(estimate.std_error) else estimate.std_error,
            "interval": None if math.isinf(estimate.high) else [estimate.low, estimate.high],
            "suggested": decision.suggest,
            "verdict": decision.reason,
            "table_factors": {f: {"factor": v, "source": s} for f, (v, s) in sorted(d.table_factors.items())},
            "placement": family_advice(tokenizer, sorted(d.families), sorted(d.models), d.unpriced, self.table),
            "billed_delta_sum": billed,
            "counted_delta_sum": counted,
            "per_record": _spread([y / x for y, x in d.pairs]),
        }


def _is_count(value: Any) -> bool:
    """A billed count as the exporter accepts counts: a JSON integer, 0 <= n <= 2**53-1."""
    return type(value) is int and 0 <= value <= MAX_COUNT


def calibrate_files(
    paths: Iterable[Path],
    table: PriceTable | None = None,
    min_effective_n: float = MIN_EFFECTIVE_N,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict[str, Any]:
    """The calibration report (schema ``llm-savings-calibrate/v2``) of every line of ``paths``."""
    cal = Calibration(table=table, min_effective_n=min_effective_n, confidence=confidence)
    for path in paths:
        with open(path, "rb") as fh:
            for line in fh:
                cal.add_line(line)
    return cal.report()


__all__ = [
    "CALIBRATE_SCHEMA",
    "LEVEL_VS_DELTA_WARNING",
    "Calibration",
    "Placement",
    "calibrate_files",
    "family_of",
    "placement_of",
]
