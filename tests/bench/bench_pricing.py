"""Pricing: dollars of one record, ours against ``litellm.cost_per_token``.

    /tmp/bench-venv/bin/python -m tests.bench.bench_pricing [--records 5000]

LiteLLM is heavy and is NOT a dependency of the project; it lives in a venv of its own, which
``scripts/bench.sh`` builds when it is missing (or by hand, from the repository's root):

    .venv/bin/python -m venv /tmp/bench-venv
    /tmp/bench-venv/bin/pip install -e . litellm==1.110.2

(``scripts/bench.sh`` runs this module with that interpreter when it exists;
without LiteLLM the module prints why and the row is skipped.)

Same usage records, same model names (every name of our bundled table's
newest version, aliases included, that LiteLLM's own cost map also knows),
and each side's own prices. Ours per record: ``PriceTable.lookup`` (by name,
time, provider) then ``cell_dollars(...).spend`` over a one-record cell,
exactly the pipeline's arithmetic. LiteLLM: ``cost_per_token(model,
prompt_tokens, completion_tokens, cache_read_input_tokens,
cache_creation_input_tokens)``, prompt tokens given OpenAI-style (cached and
written tokens included), which is how LiteLLM counts them for every
provider. 1-hour cache writes are left at 0 (``cost_per_token`` takes them
only through a provider-specific usage object) and prompts stay under 200k
tokens (LiteLLM applies long-context tiers, our table the base tier).

Dollars are compared per model within 1e-9 relative; a model that differs is
reported with the reason found by comparing the two sides' rates.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch of the cost map

from tests.bench.benchlib import Row, verdict

TARGET = 100.0
LITELLM_PIN = "litellm==1.110.2"  # the release the LiteLLM sources and captures were checked against
INSTALL = ("scripts/bench.sh builds /tmp/bench-venv when it is missing (unless BENCH_NO_PEERS=1); by hand: "
           f".venv/bin/python -m venv /tmp/bench-venv && /tmp/bench-venv/bin/pip install -e . {LITELLM_PIN}")
TS = 1_795_000_000.0  # 2026-11-18: the bundled table's newest version applies


def _records(models: list[str], n: int, seed: int = 7) -> list[tuple[str, int, int, int, int]]:
    """(model, fresh, cache_read, cache_write_5m, output), deterministic."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        fresh = rng.randrange(0, 60_000)
        read = rng.randrange(0, 60_000) if i % 3 else 0
        write = rng.randrange(0, 20_000) if i % 4 == 1 else 0
        out.append((models[i % len(models)], fresh, read, write, rng.randrange(1, 8_000)))
    return out


def measure(n: int = 5000) -> dict[str, Any]:
    try:
        import litellm
    except ImportError:
        return {"skipped": f"litellm is not installed for {sys.executable}; install it apart: {INSTALL}"}
    from exporter.engine.aggregate import CACHE_READ as READ
    from exporter.engine.aggregate import CELL_WIDTH, FRESH, OUTPUT, WRITE_5M, cell_dollars
    from exporter.prices.table import PricedModel, load_price_table

    table = load_price_table(None)
    newest = table.version_at(TS)
    assert newest is not None
    known = sorted(n for n in [*newest.models, *newest.aliases] if n in litellm.model_cost)
    names, refused = [], []
    for name in known:  # names LiteLLM's own map has but cost_per_token cannot resolve alone
        try:
            litellm.cost_per_token(model=name, prompt_tokens=10, completion_tokens=1)
            names.append(name)
        except Exception:
            refused.append(name)
    records = _records(names, n)
    lookup = table.lookup

    def ours() -> list[float]:
        out = []
        for model, fresh, read, write, output in records:
            priced = lookup(model, TS, None)
            assert isinstance(priced, PricedModel)
            cell = [0] * CELL_WIDTH
            cell[0], cell[FRESH], cell[READ], cell[WRITE_5M], cell[OUTPUT] = 1, fresh, read, write, output
            out.append(cell_dollars(cell, priced, "provider").spend)
        return out

    cost_per_token = litellm.cost_per_token

    def theirs() -> list[float]:
        out = []
        for model, fresh, read, write, output in records:
            prompt_cost, completion_cost = cost_per_token(
                model=model, prompt_tokens=fresh + read + write, completion_tokens=output,
                cache_read_input_tokens=read, cache_creation_input_tokens=write)
            out.append(prompt_cost + completion_cost)
        return out

    times: dict[str, list[float]] = {"ours": [], "litellm": []}
    results: dict[str, list[float]] = {}
    for rep in range(3):  # alternate, best CPU time of 3 each
        for name, fn in ((("ours", ours), ("litellm", theirs)) if rep % 2 == 0
                         else (("litellm", theirs), ("ours", ours))):
            started = time.process_time()
            results[name] = fn()
            times[name].append(time.process_time() - started)

    differing: dict[str, dict[str, Any]] = {}
    for record, a, b in zip(records, results["ours"], results["litellm"], strict=True):
        model = record[0]
        if abs(a - b) > 1e-9 * max(abs(a), abs(b), 1e-300):
            entry = differing.setdefault(model, {"records": 0, "example": (a, b)})
            entry["records"] += 1
    for model, entry in differing.items():
        entry["why"] = _why(model, table.lookup(model, TS, None), litellm.model_cost[model])
    per_model = n / len(names)
    return {
        "litellm_version": getattr(litellm, "__version__", None) or _version("litellm"),
        "models": len(names),
        "records": n,
        "ours_calls_per_s": n / min(times["ours"]),
        "litellm_calls_per_s": n / min(times["litellm"]),
        "equal_models": len(names) - len(differing),
        "differing": differing,
        "records_per_model": per_model,
        "refused": refused,
    }


def _version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


def _why(model: str, ours: Any, info: dict[str, Any]) -> str:
    """Name the rates that differ (ours per million, LiteLLM's per token x 1e6)."""
    pairs = (("input", ours.input, info.get("input_cost_per_token")),
             ("output", ours.output, info.get("output_cost_per_token")),
             ("cache_read", ours.cache_read, info.get("cache_read_input_token_cost")),
             ("cache_write_5m", ours.cache_write_5m, info.get("cache_creation_input_token_cost")))
    found = []
    for name, mine, per_token in pairs:
        if per_token is None:
            if name.startswith("cache") and mine != ours.input:
                found.append(f"{name}: LiteLLM has no rate (charges input {ours.input}/M?), ours {mine}/M")
            elif name.startswith("cache"):
                found.append(f"{name}: LiteLLM has no rate, ours falls back to input {mine}/M")
            continue
        theirs = per_token * 1e6
        if abs(theirs - mine) > 1e-9 * max(mine, theirs, 1e-12):
            found.append(f"{name} ours {mine:g}/M vs LiteLLM {theirs:g}/M")
    return "; ".join(found) or "same rates; LiteLLM's handling differs (tiers or cache accounting)"


def rows(result: dict[str, Any]) -> list[Row]:
    if "skipped" in result:
        return [Row("pricing calls/s vs litellm.cost_per_token", "-", "-", "-", f">= {TARGET:.0f}x",
                    "skipped", [result["skipped"]])]
    ratio = result["ours_calls_per_s"] / result["litellm_calls_per_s"]
    notes = [f"litellm {result['litellm_version']}; {result['records']:,} records over {result['models']} model "
             f"names known to both; dollars equal within 1e-9 for {result['equal_models']}/{result['models']}"]
    if result["refused"]:
        notes.append(f"left out, LiteLLM's cost_per_token cannot resolve the bare name: {', '.join(result['refused'])}")
    for model, entry in sorted(result["differing"].items()):
        a, b = entry["example"]
        notes.append(f"differs: {model} ({entry['records']} records, e.g. ours ${a:.6f} vs LiteLLM ${b:.6f}): "
                     f"{entry['why']}")
    return [Row("pricing calls/s (one record's dollars) vs litellm.cost_per_token",
                f"{result['ours_calls_per_s']:,.0f}/s", f"{result['litellm_calls_per_s']:,.0f}/s",
                f"{ratio:,.0f}x", f">= {TARGET:.0f}x", verdict(ratio >= TARGET, f"{ratio / TARGET:.0%} of target"),
                notes)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--json", action="store_true", help="print the raw result as JSON (for run_all)")
    args = parser.parse_args(argv)
    result = measure(args.records)
    if args.json:
        print(json.dumps(result))
    else:
        for row in rows(result):
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
