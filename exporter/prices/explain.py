"""Where every rate of a model at a time comes from: what ``prices show`` prints.

A rate is the table's own, a family multiplier times the input rate, or the
input rate when nothing else is listed (no invented discount or premium), so a
dollar figure can be traced to one line of the price table.
"""

from __future__ import annotations

import difflib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from exporter.prices.table import PriceTable
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
    else:
        how = f"provider-qualified name {provider}/{model}"
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
    return result
