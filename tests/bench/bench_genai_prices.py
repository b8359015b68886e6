"""Pricing with tiers: one request's dollars, ours against ``genai_prices.calc_price``, in one run.

    python -m tests.bench.bench_genai_prices [--records 5000]

Both sides price the same requests by their own data: ours is a table imported from the same
genai-prices release (``prices import-genai-prices``, providers openai, anthropic, google,
deepseek), so the dollars must agree. Requests (seeded) cover prompt tiers (prompts either side
of 200k/272k), service tiers (batch, flex, priority), dated versions and DeepSeek's windows.
Ours per request: ``PriceTable.lookup(name, ts, service_tier=, prompt_tokens=)`` then
``cell_dollars(...).spend`` over a one-record cell, the pipeline's arithmetic. Theirs:
``calc_price(Usage(...), model_ref, provider_id=, genai_request_timestamp=, price_context=)``.
Best CPU time of 3 alternating rounds; dollars compared within 1e-9 relative (ours is a float).

The loop floor is the same loop over the same records doing nothing but what ours does around
its two calls (build the name and the one-record cell, keep a figure): no lookup, no dollars.
It bounds the ratio any pricing code called this way can reach; a second row prints it, and
the same loop calling two empty functions of the same signatures (what the two calls cost).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from datetime import UTC, datetime
from typing import Any

from tests.bench.benchlib import Row, verdict

TARGET = 100.0
PROVIDERS = ("openai", "anthropic", "google", "deepseek")
TIERS = (None, None, "batch", "flex", "priority")


def measure(n: int = 5000) -> dict[str, Any]:
    try:
        import genai_prices
        from genai_prices import data_snapshot
    except ImportError:
        return {"skipped": "genai-prices is not installed: pip install 'llm-savings-exporter[genai-prices]'"}
    from exporter.engine.aggregate import (
        CACHE_READ,
        CELL_WIDTH,
        FRESH,
        OUTPUT,
        WRITE_1H,
        WRITE_5M,
        Dollars,
        cell_dollars,
    )
    from exporter.prices.importers.genai_prices import convert, genai_resolver
    from exporter.prices.table import PricedModel, parse_price_table

    snapshot = data_snapshot.get_snapshot()
    chosen = [p for p in snapshot.providers if p.id in PROVIDERS]
    resolve = genai_resolver(snapshot)
    table = parse_price_table(convert(chosen, resolve, source="bench").text, "<bench>")
    models = [(p.id, m.id) for p in chosen for m in p.models if f"{p.id}/{m.id}" in table.newest.models
              and resolve(m.id, p.id) == f"{p.id}/{m.id}"]
    rng = random.Random(14)
    start = table.versions[1].effective_from if len(table.versions) > 1 else table.versions[0].effective_from
    records = []
    for _ in range(n):
        provider, model = rng.choice(models)
        prompt = rng.choice([rng.randrange(0, 190_000), rng.randrange(200_001, 400_000)])
        read = rng.randrange(0, prompt + 1) if rng.random() < 0.4 else 0
        write = rng.randrange(0, prompt - read + 1) if rng.random() < 0.2 else 0
        ts = start + rng.uniform(-86400 * 30, 86400 * 600)
        records.append((provider, model, prompt - read - write, read, write, rng.randrange(1, 8_000), ts,
                        rng.choice(TIERS)))
    lookup = table.lookup

    def ours() -> list[float]:
        out = []
        for provider, model, fresh, read, write, output, ts, tier in records:
            priced = lookup(f"{provider}/{model}", ts, service_tier=tier, prompt_tokens=fresh + read + write)
            assert isinstance(priced, PricedModel)
            cell = [0] * CELL_WIDTH
            cell[0], cell[FRESH], cell[CACHE_READ], cell[WRITE_5M], cell[OUTPUT] = 1, fresh, read, write, output
            cell[WRITE_1H] = 0
            out.append(cell_dollars(cell, priced, "provider").spend)
        return out

    def floor() -> list[float]:  # ours without the lookup and the dollars: what bounds it
        out = []
        for provider, model, fresh, read, write, output, _ts, _tier in records:
            name = f"{provider}/{model}"
            cell = [0] * CELL_WIDTH
            cell[0], cell[FRESH], cell[CACHE_READ], cell[WRITE_5M], cell[OUTPUT] = 1, fresh, read, write, output
            cell[WRITE_1H] = 0
            out.append(float(len(name)))
        return out

    some_rates = table.newest.models[f"{models[0][0]}/{models[0][1]}"]
    some_dollars = cell_dollars([0] * CELL_WIDTH, some_rates, "provider")

    def empty_lookup(model: str, ts: float, provider: str | None = None, *, service_tier: str | None = None,
                     prompt_tokens: int = 0) -> PricedModel | str:
        return some_rates

    def empty_dollars(cell: list[int], rates: PricedModel, method: str) -> Dollars:
        return some_dollars

    def calls() -> list[float]:  # ours with two empty functions of the same signatures: the cost of calling
        out = []
        for provider, model, fresh, read, write, output, ts, tier in records:
            priced = empty_lookup(f"{provider}/{model}", ts, service_tier=tier, prompt_tokens=fresh + read + write)
            assert isinstance(priced, PricedModel)
            cell = [0] * CELL_WIDTH
            cell[0], cell[FRESH], cell[CACHE_READ], cell[WRITE_5M], cell[OUTPUT] = 1, fresh, read, write, output
            cell[WRITE_1H] = 0
            out.append(empty_dollars(cell, priced, "provider").spend)
        return out

    calc_price, usage = genai_prices.calc_price, genai_prices.Usage

    def theirs() -> list[float]:
        out = []
        for provider, model, fresh, read, write, output, ts, tier in records:
            context = None if tier is None else ({"processing": "batch"} if tier == "batch"
                                                 else {"service_tier": tier})
            price = calc_price(usage(input_tokens=fresh + read + write, cache_read_tokens=read,
                                     cache_write_tokens=write, output_tokens=output), model,
                               provider_id=provider, genai_request_timestamp=datetime.fromtimestamp(ts, UTC),
                               price_context=context)
            out.append(float(price.total_price))
        return out

    times: dict[str, list[float]] = {"ours": [], "genai_prices": [], "floor": [], "calls": []}
    results: dict[str, list[float]] = {}
    for rep in range(3):
        order = (("ours", ours), ("genai_prices", theirs), ("floor", floor), ("calls", calls))
        for name, fn in order if rep % 2 == 0 else order[::-1]:
            started = time.process_time()
            results[name] = fn()
            times[name].append(time.process_time() - started)
    differ = sum(abs(a - b) > 1e-9 * max(abs(a), abs(b), 1e-300)
                 for a, b in zip(results["ours"], results["genai_prices"], strict=True))
    return {"genai_prices_version": genai_prices.__version__, "models": len(models), "records": n,
            "ours_calls_per_s": n / min(times["ours"]), "genai_calls_per_s": n / min(times["genai_prices"]),
            "floor_calls_per_s": n / min(times["floor"]), "empty_calls_per_s": n / min(times["calls"]),
            "differing_records": differ}


def rows(result: dict[str, Any]) -> list[Row]:
    figure = "pricing calls/s with tiers (one request's dollars) vs genai_prices.calc_price"
    if "skipped" in result:
        return [Row(figure, "-", "-", "-", f">= {TARGET:.0f}x", "skipped", [result["skipped"]])]
    ratio = result["ours_calls_per_s"] / result["genai_calls_per_s"]
    notes = [f"genai-prices {result['genai_prices_version']}; {result['records']:,} requests over "
             f"{result['models']} models; dollars differ (> 1e-9 relative) on {result['differing_records']}"]
    floor, empty = result["floor_calls_per_s"], result.get("empty_calls_per_s", 0.0)
    ours_us, floor_us = 1e6 / result["ours_calls_per_s"], 1e6 / floor
    notes.append(f"ours {ours_us:.2f} us per request, of which {floor_us:.2f} us the loop floor (next row): "
                 f"lookup + cell_dollars take {ours_us - floor_us:.2f} us")
    return [Row(figure, f"{result['ours_calls_per_s']:,.0f}/s", f"{result['genai_calls_per_s']:,.0f}/s",
                f"{ratio:,.0f}x", f">= {TARGET:.0f}x", verdict(ratio >= TARGET, f"{ratio / TARGET:.0%} of target"),
                notes),
            Row("loop floor of that row: the same loop building the name and the cell, no lookup, no dollars",
                f"{floor:,.0f}/s", f"{result['genai_calls_per_s']:,.0f}/s",
                f"{floor / result['genai_calls_per_s']:,.0f}x", "-", "n/a",
                ["the ratio no pricing code called per request this way can pass on this run",
                 f"with two empty Python functions of the same signatures in place of lookup and cell_dollars: "
                 f"{empty:,.0f}/s = {empty / result['genai_calls_per_s']:,.0f}x (the cost of the two calls alone)"])]


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
