"""Where every rate of a model at a time comes from: what ``prices show`` prints.

A rate is the table's own, a family multiplier times the input rate, or the
input rate when nothing else is listed (no invented discount or premium), so a
dollar figure can be traced to one line of the price table.
"""

from __future__ import annotations

import difflib
import itertools
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from exporter.prices.table import PriceTable
from exporter.prices.tiers import ModelTiers
from exporter.yamlpos import YamlError, load_located

RATE_KEYS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def _raw_entry(path: Path, version: str, model: str) -> dict[str, Any]:
    """The model's entry as written, to tell explicit rates from derived ones.

    Versions are found by label, not position: a file may list them in any order.
    """
    try:
        doc = load_located(path.read_text(encoding="utf-8"), str(path))
        for raw in doc.data["versions"]:
            if str(raw.get("version")) == version:
                entry = raw["models"][model]
                return entry if isinstance(entry, dict) else {}
    except (OSError, YamlError, KeyError, IndexError, TypeError, AttributeError):
        pass
    return {}


def explain(table: PriceTable, model: str, ts: float, provider: str | None = None,
            path: Path | None = None) -> dict[str, Any]:
    """Everything ``prices show`` prints, as plain data: the resolved model, its version and the
    origin of each rate; for an unpriced name, why, and close names."""
    version = table.version_at(ts)
    result: dict[str, Any] = {"query": model, "at": _iso(ts), "table": table.path,
                              "table_sha256": table.sha256}
    priced = table.lookup(model, ts, provider)
    if isinstance(priced, str):
        result["unpriced"] = priced
        if version is not None:
            names = list(version.models) + list(version.aliases)
            result["version"] = version.version
            result["did_you_mean"] = difflib.get_close_matches(model, names, n=5, cutoff=0.6)
        else:
            result["first_version_from"] = table.versions[0].effective_from_text
        return result
    assert version is not None
    raw = _raw_entry(path, version.version, priced.model) if path is not None else {}
    family = version.families.get(priced.family)
    if priced.model == model:
        how = "model name"
    elif version.aliases.get(model) == priced.model:
        how = f"alias {model!r}"
    elif provider and priced.model in (f"{provider}/{model}", version.aliases.get(f"{provider}/{model}")):
        how = f"provider-qualified name {provider}/{model}"
    else:
        how = f"match rule of {priced.model!r}"
    rates: dict[str, dict[str, Any]] = {}
    for key in RATE_KEYS:
        value = getattr(priced, key)
        if key in raw:
            origin = "table"
        elif key == "cache_read":
            origin = "input rate (none listed: no invented discount)"
        elif key in ("cache_write_5m", "cache_write_1h"):
            multiplier = None
            if family is not None:
                multiplier = getattr(family, f"{key}_multiplier")
            if multiplier is not None:
                origin = f"family {priced.family!r} multiplier {multiplier:g} x input"
            else:
                origin = "input rate (no premium listed: none invented)"
        else:
            origin = "table"
        rates[key] = {"usd_per_million": value, "origin": origin}
    result.update({
        "model": priced.model,
        "resolved_by": how,
        "family": priced.family,
        "version": version.version,
        "effective_from": version.effective_from_text,
        "version_source": version.source,
        "meta": version.model_meta.get(priced.model, {}),
        "rates": rates,
        "billed_token_factors": dict(priced.factors),
    })
    tiers = version.tiers.get(priced.model)
    if tiers is not None:
        result["v2"] = describe_tiers(tiers)
    return result


def _rate_dict(rates: Any) -> dict[str, float]:
    return {key: getattr(rates, key) for key in RATE_KEYS}


def describe_tiers(tiers: ModelTiers) -> dict[str, Any]:
    """A v2 model's prompt tiers, service tiers and time windows, with their final rates."""
    def rate_set(found: Any) -> dict[str, Any]:
        return {"rates": _rate_dict(found.base),
                "tiers": [{"above": t.above, "rates": _rate_dict(t.rates)} for t in found.tiers]}

    return {
        "tiers": rate_set(tiers.default)["tiers"],
        "service_tiers": {name: rate_set(found) for name, found in tiers.service_tiers},
        "time_windows": [{"name": w.name, "zone": w.zone, "start": f"{w.start // 60:02d}:{w.start % 60:02d}",
                          "end": f"{w.end // 60:02d}:{w.end % 60:02d}", "multiplier": w.multiplier,
                          "rates": dict(w.rates)} for w in tiers.windows],
    }


# ---------------------------------------------------------------------------
# `prices list` and `prices validate`: every model, and what a table holds


def _rates(priced: Any) -> dict[str, float]:
    return {key: getattr(priced, key) for key in RATE_KEYS}


def list_models(table: PriceTable, ts: float | None = None) -> list[dict[str, Any]]:
    """Every model of the table, one row each, as ``prices list`` prints them.

    Without ``ts``: every model of any version, with the rates of the newest version
    that lists it; with ``ts``: the models of the version in force then, at its rates.
    ``versions`` names every version that lists the model; ``rate_changes`` counts how
    often its rates differ from the previous version that lists it.
    """
    chosen = table.version_at(ts) if ts is not None else None
    if ts is not None and chosen is None:
        return []
    names: dict[str, None] = {}
    for version in reversed(table.versions):  # newest first: its order, then names only older versions list
        if chosen is None or version is chosen:
            names.update(dict.fromkeys(version.models))
    rows = []
    for name in names:
        listing = [v for v in table.versions if name in v.models]
        shown = chosen if chosen is not None else listing[-1]
        priced = shown.models[name]
        history = [_rates(v.models[name]) for v in listing]
        rows.append({
            "model": name,
            "provider": shown.model_meta.get(name, {}).get("provider"),
            "family": priced.family,
            "tokenizer": shown.tokenizer(name),
            "version": shown.version,
            "versions": [v.version for v in listing],
            "rate_changes": sum(1 for a, b in itertools.pairwise(history) if a != b),
            "rates": _rates(priced),
            "aliases": sum(1 for target in shown.aliases.values() if target == name),
        })
    return rows


def tokenizer_warnings(table: PriceTable) -> list[str]:
    """Families whose billed_token_factor covers models of different tokenizer keys (one factor for all)."""
    warnings = []
    for version in table.versions:
        for family_name, family in sorted(version.families.items()):
            if not family.billed_token_factor:
                continue
            keys = sorted({version.tokenizer(m) or f"model:{m}" for m, p in version.models.items()
                           if p.family == family_name})
            if len(keys) > 1:
                warnings.append(
                    f"version {version.version}: family {family_name!r} has a billed_token_factor but its models "
                    f"have {len(keys)} tokenizer keys ({', '.join(keys[:4])}{', ...' if len(keys) > 4 else ''}): "
                    "one factor applies to all of them; calibrate measures one per tokenizer")
    return warnings


def describe_table(table: PriceTable) -> dict[str, Any]:
    """What ``prices validate`` reports about a table that loaded: path, sha256, versions, models, tokenizers."""
    newest = table.newest
    without = sorted(m for m in newest.models if newest.tokenizer(m) is None)
    return {
        "path": table.path,
        "sha256": table.sha256,
        "versions": [{"version": v.version, "effective_from": v.effective_from_text, "models": len(v.models)}
                     for v in table.versions],
        "models": len(newest.models),
        "aliases": len(newest.aliases),
        "model_entries": sum(len(v.models) for v in table.versions),
        "tokenizer_keys": len(newest.models) - len(without),
        "without_tokenizer": without,
        "warnings": tokenizer_warnings(table),
    }
