"""Where a calibrated factor goes in the price table, and the ``families:`` block ``calibrate`` suggests.

A ``billed_token_factor`` lives under a price *family*, but it is measured per
*tokenizer* (``exporter.report.calibration``). When every model of a family
has the measured tokenizer, the factor goes under that family. When a family
mixes tokenizers (``anthropic``: haiku and sonnet), a factor under it would
apply to models it was not measured on, so the advice is a new family for the
measured models (the old family's cache-write multipliers copied, so their
prices do not change) and the models to move into it.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from exporter.prices.table import PriceTable, PriceVersion


def _tokenizer_or_model(version: PriceVersion, model: str) -> str:
    return version.tokenizer(model) or f"model:{model}"


def _new_family_name(family: str, tokenizer: str) -> str:
    base = tokenizer.removeprefix("model:")
    if base.startswith(family):
        return re.sub(r"[^A-Za-z0-9._-]+", "-", base)
    return re.sub(r"[^A-Za-z0-9._-]+", "-", f"{family}-{base}")


def family_advice(tokenizer: str, families: Sequence[str], models: Sequence[str], unpriced: bool,
                  table: PriceTable | None) -> list[dict[str, Any]]:
    """One entry per family the measured models belong to: the family to put the factor under, and how."""
    if table is None or unpriced:
        return [{"family": None, "new": False, "models": list(models),
                 "text": f"{', '.join(models)}: not in the price table; add the model(s) with a family and "
                         "a tokenizer key first"}]
    newest = table.newest
    advice: list[dict[str, Any]] = []
    for family in families:
        if not family:
            advice.append({"family": None, "new": False, "models": list(models),
                           "text": "these models have no family in the price table; a factor lives under "
                                   "versions[].families, so give them one"})
            continue
        members = sorted(name for name, priced in newest.models.items() if priced.family == family)
        keys = sorted({_tokenizer_or_model(newest, name) for name in members})
        if keys == [tokenizer]:
            advice.append({"family": family, "new": False, "models": members,
                           "text": f"under versions[].families.{family}.billed_token_factor: every model of "
                                   f"{family} has tokenizer {tokenizer}"})
            continue
        moved = [name for name in members if _tokenizer_or_model(newest, name) == tokenizer] or list(models)
        spec = newest.families.get(family)
        copied = {} if spec is None else {
            key: value for key, value in (("cache_write_5m_multiplier", spec.cache_write_5m_multiplier),
                                          ("cache_write_1h_multiplier", spec.cache_write_1h_multiplier))
            if value is not None}
        name = _new_family_name(family, tokenizer)
        advice.append({"family": name, "new": True, "copy_from": family, "copied": copied, "models": moved,
                       "text": f"{family} mixes tokenizers ({', '.join(keys)}): a factor under it would apply "
                               f"to all of them. Add family {name} (with {family}'s cache-write multipliers) "
                               f"and set `family: {name}` on {', '.join(moved)}"})
    return advice


def _factor_line(row: Mapping[str, Any]) -> str:
    low, high = row["interval"]
    return (f'      "{row["count_method"]}": {row["factor"]:.3f}  # delta factor, n={row["n"]} '
            f'(effective {row["effective_n"]:.1f}), interval {low:.3f}..{high:.3f}')


def suggested_yaml(deltas: Sequence[Mapping[str, Any]], levels: Sequence[Mapping[str, Any]]) -> str:
    """A ``families:`` block for the price table: suggested delta factors only, the rest as comments."""
    blocks: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for row in deltas:
        if not row["suggested"]:
            notes.append(f"# tokenizer {row['tokenizer']}, {row['count_method']}: {row['verdict']}")
            continue
        for place in row["placement"]:
            if place["family"] is None:
                notes.append(f"# tokenizer {row['tokenizer']}, {row['count_method']}: factor {row['factor']:.3f} "
                             f"suggested but nowhere to put it: {place['text']}")
                continue
            block = blocks.setdefault(place["family"], {"place": place, "lines": []})
            block["lines"].append(_factor_line(row))
    out = [
        "# suggested billed_token_factor, measured by tokenizer: merge under versions[].families of your",
        "# price table (each version from which it holds); only factors whose verdict is 'suggested'",
        "families:",
    ]
    for family in sorted(blocks):
        place = blocks[family]["place"]
        out.append(f"  {family}:")
        text = f"NEW family: {place['text']}" if place["new"] else place["text"].split(": ", 1)[-1]
        out.extend(f"    # {line}" for line in textwrap.wrap(text, 92, break_on_hyphens=False))
        if place["new"]:
            out.extend(f"    {key}: {value!r}" for key, value in place["copied"].items())
        out.append("    billed_token_factor:")
        out.extend(blocks[family]["lines"])
    if not blocks:
        out[-1] = "families: {}  # nothing to suggest"
    out.extend(notes)
    measured = {row["tokenizer"] for row in deltas}
    for tokenizer in sorted({lv["tokenizer"] for lv in levels} - measured):
        seen = ", ".join(
            f"{lv['population']} {lv['count_method']} {lv['ratio_of_sums']:.3f} (n={lv['n']})"
            for lv in levels
            if lv["tokenizer"] == tokenizer and lv["ratio_of_sums"] is not None
        )
        out.append(f"# tokenizer {tokenizer}: no billed_before/billed_after records, no factor suggested; "
                   f"level ratio {seen} is NOT a delta factor")
    return "\n".join(out) + "\n"


__all__ = ["family_advice", "suggested_yaml"]
