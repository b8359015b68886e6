"""Pricing with tiers, ours against ``genai_prices.calc_price``, in one run: as the exporter prices, and per request.

    python -m tests.bench.bench_genai_prices [--records 5000]

Both sides price the same requests by their own data: ours is a table imported from the same
genai-prices release (``prices import-genai-prices``, providers openai, anthropic, google,
deepseek), so the dollars must agree. Requests (seeded) cover prompt tiers (prompts either side
of 200k/272k), service tiers (batch, flex, priority), dated versions and DeepSeek's windows.
Theirs, per request: ``calc_price(Usage(...), model_ref, provider_id=, genai_request_timestamp=,
price_context=)``, its ``total_price``. Best CPU time of 3 alternating rounds.

Ours, two ways:

- **as the exporter prices traffic** (the stream rows): per request what ``Pipeline.count_record``
  does to reach the cell of its rates, no more and no less: the price version from the record's
  15-minute slot (``_slots``; ``_slot``'s bisects when a slot opens; the slot's month is left out,
  it is counting's), the route by the key's pricing part (version, model, provider, service tier),
  which holds an untiered model's cell (looked up once, when the route opens) and none for a tiered
  model's, whose records take their prompt tier's remembered cell when only the prompt size decides
  the rates (``Pipeline._prompt_tier_routes``) and are otherwise looked up
  (``PriceTable.lookup(model, ts, provider, service_tier=, prompt_tokens=)``, the call
  ``Pipeline._tiered`` makes) and go to the cell of their (route, rates) (``_tiered_routes``); then
  the token sums added (``count_record``'s additions) and ``cell_dollars`` once per cell, as a
  scrape or the end of a replay does. The requests carry no savings, so no cliff is looked up. The
  total is compared with the sum of calc_price's (1e-9 relative). Two streams: the benchmark's
  requests (5,000 over 208 models and 21 months: nearly a cell per request, the worst case for this
  way) and a month of a gateway's traffic (the same generator, one calendar month, twelve models,
  six of them with prompt tiers or time windows). For the month, the same loop with every slot
  already open (as a real month's many requests per quarter hour find them), and its floor: the
  slots, routes and additions without a lookup (a tiered route's records in its route's cell) and
  without the dollars, what the pipeline does per record whatever prices it. A note gives the whole
  ``Pipeline.count_record`` over the same requests as well.
- **per request** (``PriceTable.lookup`` then ``cell_dollars(...).spend`` over a one-record cell):
  what pricing each request on its own would cost. ``cell_dollars`` works out spend, savings,
  would-have-saved and the cache effects where calc_price works out one total. Dollars compared
  per request within 1e-9 relative (ours is a float).

The loop floor is the per-request loop doing nothing but what ours does around its two calls
(build the name and the one-record cell, keep a figure): no lookup, no dollars. It bounds the
ratio any pricing code called this way can reach; a row prints it, and in its notes the same
loop calling two empty functions of the same signatures (what the two calls cost).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from tests.bench.benchlib import Row, verdict

TARGET = 100.0
PROVIDERS = ("openai", "anthropic", "google", "deepseek")
TIERS = (None, None, "batch", "flex", "priority")
MONTH = datetime(2026, 11, 1, tzinfo=UTC)  # the month stream's: inside one version of genai-prices 0.2.3
MONTH_DAYS = 30
MONTH_MODELS = 12  # half of them with prompt tiers or time windows
# One request: provider, model, fresh input, cache read, cache write, output, ts, service tier (a bare
# tuple, only built and unpacked).
Request = tuple[str, str, int, int, int, int, float, str | None]


def requests(rng: random.Random, models: list[tuple[str, str]], n: int, start: float, span: float) -> list[Request]:
    """``n`` requests to ``models`` dated in [start, start + span): prompts either side of 200k."""
    out: list[Request] = []
    for _ in range(n):
        provider, model = rng.choice(models)
        prompt = rng.choice([rng.randrange(0, 190_000), rng.randrange(200_001, 400_000)])
        read = rng.randrange(0, prompt + 1) if rng.random() < 0.4 else 0
        write = rng.randrange(0, prompt - read + 1) if rng.random() < 0.2 else 0
        ts = start + rng.uniform(0, span)
        out.append((provider, model, prompt - read - write, read, write, rng.randrange(1, 8_000), ts,
                    rng.choice(TIERS)))
    return out


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
        REQUESTS,
        WRITE_1H,
        WRITE_5M,
        Dollars,
        cell_dollars,
    )
    from exporter.engine.months import MonthOf
    from exporter.engine.pipeline import Pipeline
    from exporter.engine.plainpath import SLOT_SECONDS
    from exporter.engine.usage import Usage
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
    records = requests(rng, models, n, start - 86400 * 30, 86400 * 630)
    version = table.version_at(MONTH.timestamp())
    assert version is not None
    tiered = [(provider, model) for provider, model in models
              if (tiers := version.tiers.get(f"{provider}/{model}")) is not None and tiers.tiered]
    plain = [pair for pair in models if pair not in tiered]
    # half of the month's models with prompt tiers or time windows (each request looked up by its own), half without
    month_models = rng.sample(tiered, MONTH_MODELS // 2) + rng.sample(plain, MONTH_MODELS - MONTH_MODELS // 2)
    month = requests(rng, month_models, n, MONTH.timestamp(), 86400 * MONTH_DAYS)
    lookup = table.lookup

    starts = [version.effective_from for version in table.versions]  # Pipeline._version_starts

    def slots_of(given: list[Request]) -> dict[float, int]:
        """Every slot of ``given`` already open, as the pipeline's are where requests come oftener than 15 minutes."""
        opened: dict[float, int] = {}
        for *_request, ts, _tier in given:
            version, kept = slot_version(ts)
            if kept:
                opened[ts // SLOT_SECONDS] = version
        return opened

    def slot_version(ts: float) -> tuple[int, bool]:  # the version part of Pipeline._slot: index, whether kept
        start = ts // SLOT_SECONDS * SLOT_SECONDS
        return bisect_right(starts, ts), bisect_right(starts, start) == bisect_left(starts, start + SLOT_SECONDS)

    def stream(given: list[Request], slots_open: bool = False) -> Callable[[], tuple[float, int]]:
        opened = slots_of(given) if slots_open else {}

        def priced_as_the_exporter_does() -> tuple[float, int]:
            # the pricing part of Pipeline.count_record's state: the price version of each 15-minute slot
            # (_slots; their month is left out, counting's and not pricing's), the routes by the key's pricing
            # part (version, model, provider, service tier) holding the cell of an untiered model's rates and, for
            # a tiered model, an empty list (_routes, whose tiered routes hold no cell), the cells of a tiered
            # model's records by route and rates (_tiered_routes), and the cells by rates (the aggregates')
            slots = dict(opened)
            routes: dict[tuple[int, str, str, str | None], list[int]] = {}
            tiered_cells: dict[tuple[tuple[int, str, str, str | None], PricedModel], list[int]] = {}
            prompt_tiers: dict[tuple[int, str, str, str | None], tuple[list[int], list[list[int] | None]]] = {}
            cells: dict[PricedModel, list[int]] = {}
            for provider, model, fresh, read, write, output, ts, tier in given:
                version = slots.get(ts // SLOT_SECONDS)
                if version is None:  # a slot opens (Pipeline._slot, a call there too): its version, kept unless
                    version, kept = slot_version(ts)  # a version starts inside
                    if kept:
                        slots[ts // SLOT_SECONDS] = version
                key = (version, model, provider, tier)
                cell = routes.get(key)
                if cell is None:  # a route opens (Pipeline._route): the route's own lookup, its cell or TIERED
                    priced = lookup(model, ts, provider, service_tier=tier)
                    assert isinstance(priced, PricedModel)
                    tiers = table.tiers_of(priced, ts)
                    cell = routes[key] = ([] if tiers is not None and tiers.tiered
                                          else cells.setdefault(priced, [0] * CELL_WIDTH))
                if not cell:  # TIERED: each record by its own rates (Pipeline._tiered; no savings to cliff here)
                    prompt = fresh + read + write
                    by_prompt = prompt_tiers.get(key)  # prompt tiers alone: the tier's cell, remembered
                    if by_prompt is None or (cell := by_prompt[1][bisect_left(by_prompt[0], prompt)]) is None:
                        priced = lookup(model, ts, provider, service_tier=tier, prompt_tokens=prompt)
                        assert isinstance(priced, PricedModel)
                        tiered_key = (key, priced)
                        cell = tiered_cells.get(tiered_key)
                        if cell is None:
                            cell = tiered_cells[tiered_key] = cells.setdefault(priced, [0] * CELL_WIDTH)
                        if by_prompt is None:  # Pipeline._remember_prompt_tier
                            aboves = table.prompt_tier_thresholds(model, ts, provider, tier)
                            if aboves is not None:
                                by_prompt = prompt_tiers[key] = (aboves, [None] * (len(aboves) + 1))
                        if by_prompt is not None:
                            by_prompt[1][bisect_left(by_prompt[0], prompt)] = cell
                cell[REQUESTS] += 1  # the additions of Pipeline.count_record
                cell[FRESH] += fresh
                cell[CACHE_READ] += read
                cell[WRITE_5M] += write
                cell[WRITE_1H] += 0
                cell[OUTPUT] += output
            # the dollars once per cell, as a scrape or the end of a replay works them out
            return math.fsum(cell_dollars(cell, rates, "provider").spend for rates, cell in cells.items()), len(cells)
        return priced_as_the_exporter_does

    def stream_floor(given: list[Request], slots_open: bool = False) -> Callable[[], tuple[float, int]]:
        opened = slots_of(given) if slots_open else {}

        def routed_without_prices() -> tuple[float, int]:
            # the loop above without what prices each tiered record and without the dollars: slots, routes
            # (a tiered route keeps the cell of its route's rates) and the additions, what bounds that row
            slots = dict(opened)
            routes: dict[tuple[int, str, str, str | None], list[int]] = {}
            for provider, model, fresh, read, write, output, ts, tier in given:
                version = slots.get(ts // SLOT_SECONDS)
                if version is None:
                    version, kept = slot_version(ts)
                    if kept:
                        slots[ts // SLOT_SECONDS] = version
                key = (version, model, provider, tier)
                cell = routes.get(key)
                if cell is None:
                    cell = routes[key] = [0] * CELL_WIDTH
                cell[REQUESTS] += 1
                cell[FRESH] += fresh
                cell[CACHE_READ] += read
                cell[WRITE_5M] += write
                cell[WRITE_1H] += 0
                cell[OUTPUT] += output
            return 0.0, len(routes)
        return routed_without_prices

    def pipeline(given: list[Request]) -> Callable[[], tuple[float, int]]:
        def counted_by_the_pipeline() -> tuple[float, int]:  # the whole count_record, then dollars per cell
            counting = Pipeline(table, wall_clock=lambda: 4e9)  # requests run into 2027: none is future_ts
            count = counting.count_record
            for number, (provider, model, fresh, read, write, output, ts, tier) in enumerate(given):
                count(ts, f"req-{number}", model, provider, None, None, None, None, None, (),
                      Usage(fresh, read, write, 0, output, "bench"), service_tier=tier)
            spends = []
            for key, cell, rates in counting.aggregates.priced_cells():
                assert rates is not None, "a request went unpriced"
                spends.append(cell_dollars(cell, rates, key.method).spend)
            return math.fsum(spends), len(spends)
        return counted_by_the_pipeline

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

    def theirs(given: list[Request]) -> Callable[[], list[float]]:
        def calc_price_per_request() -> list[float]:
            out = []
            for provider, model, fresh, read, write, output, ts, tier in given:
                context = None if tier is None else ({"processing": "batch"} if tier == "batch"
                                                     else {"service_tier": tier})
                price = calc_price(usage(input_tokens=fresh + read + write, cache_read_tokens=read,
                                         cache_write_tokens=write, output_tokens=output), model,
                                   provider_id=provider, genai_request_timestamp=datetime.fromtimestamp(ts, UTC),
                                   price_context=context)
                out.append(float(price.total_price))
            return out
        return calc_price_per_request

    order: tuple[tuple[str, Callable[[], Any]], ...] = (
        ("stream", stream(records)), ("genai_prices", theirs(records)), ("ours", ours), ("floor", floor),
        ("calls", calls), ("pipeline", pipeline(records)), ("month_stream", stream(month)),
        ("month_genai_prices", theirs(month)), ("month_pipeline", pipeline(month)),
        ("month_stream_open", stream(month, slots_open=True)), ("month_stream_floor", stream_floor(month)),
        ("month_stream_open_floor", stream_floor(month, slots_open=True)))
    times: dict[str, list[float]] = {name: [] for name, _fn in order}
    results: dict[str, Any] = {}
    for rep in range(3):
        for name, fn in order if rep % 2 == 0 else order[::-1]:
            started = time.process_time()
            results[name] = fn()
            times[name].append(time.process_time() - started)
    per_s = {name: n / min(spent) for name, spent in times.items()}
    month_of = MonthOf("UTC")  # the pipeline's cells are per month too (and tenant and method: one of each here)
    result: dict[str, Any] = {
        "genai_prices_version": genai_prices.__version__, "models": len(models), "month_models": len(month_models),
        "records": n, "month": f"{MONTH:%Y-%m}",
        "ours_calls_per_s": per_s["ours"], "genai_calls_per_s": per_s["genai_prices"],
        "floor_calls_per_s": per_s["floor"], "empty_calls_per_s": per_s["calls"],
        "differing_records": sum(not _close(a, b) for a, b in zip(results["ours"], results["genai_prices"],
                                                                   strict=True)),
        "stream_month_cells": len({(month_of(ts), lookup(model, ts, provider, service_tier=tier,
                                                         prompt_tokens=fresh + read + write))
                                   for provider, model, fresh, read, write, _output, ts, tier in records})}
    for prefix in ("", "month_"):
        total = math.fsum(results[f"{prefix}genai_prices"])
        result.update({
            f"{prefix}stream_calls_per_s": per_s[f"{prefix}stream"],
            f"{prefix}stream_genai_calls_per_s": per_s[f"{prefix}genai_prices"],
            f"{prefix}pipeline_calls_per_s": per_s[f"{prefix}pipeline"],
            f"{prefix}stream_cells": results[f"{prefix}stream"][1],
            f"{prefix}pipeline_cells": results[f"{prefix}pipeline"][1],
            f"{prefix}slots": len({ts // SLOT_SECONDS for *_request, ts, _tier in (month if prefix else records)}),
            f"{prefix}total_usd": total,
            f"{prefix}stream_total_agrees": _close(results[f"{prefix}stream"][0], total),
            f"{prefix}pipeline_total_agrees": _close(results[f"{prefix}pipeline"][0], total)})
    result.update({"month_stream_open_calls_per_s": per_s["month_stream_open"],
                   "month_stream_floor_calls_per_s": per_s["month_stream_floor"],
                   "month_stream_open_floor_calls_per_s": per_s["month_stream_open_floor"],
                   "month_stream_open_total_agrees": _close(results["month_stream_open"][0], result["month_total_usd"]),
                   "month_tiered_records": sum((provider, model) in tiered for provider, model, *_rest in month)})
    return result


def _close(ours: float, theirs: float) -> bool:
    """Equal dollars within 1e-9 relative (ours are floats of the same decimal rates)."""
    return abs(ours - theirs) <= 1e-9 * max(abs(ours), abs(theirs), 1e-300)


def _stream_row(result: dict[str, Any], prefix: str, what: str, cells_note: str) -> Row:
    ours, theirs = result[f"{prefix}stream_calls_per_s"], result[f"{prefix}stream_genai_calls_per_s"]
    pipeline = result[f"{prefix}pipeline_calls_per_s"]
    ratio = ours / theirs
    agree = "equal" if result[f"{prefix}stream_total_agrees"] else "NOT equal"
    pipeline_agree = "equal" if result[f"{prefix}pipeline_total_agrees"] else "NOT equal"
    notes = [f"{result['records']:,} requests in {result[f'{prefix}stream_cells']:,} cells {cells_note}; "
             f"total ${result[f'{prefix}total_usd']:,.2f}, {agree} to calc_price's sum (1e-9 relative); "
             f"ours {1e6 / ours:.2f} us per request, calc_price {1e6 / theirs:.1f} us; "
             f"{result[f'{prefix}slots']:,} of the requests open a 15-minute slot (its price version worked out)"]
    if prefix and "month_stream_open_calls_per_s" in result:  # saved before the month's split existed: none
        opened = result["month_stream_open_calls_per_s"]
        floor = result["month_stream_floor_calls_per_s"]
        marginal = 1 / ours - 1 / floor  # seconds per request the lookups, tiered cells and dollars add
        open_agree = "equal" if result["month_stream_open_total_agrees"] else "NOT equal"
        notes.append(f"the same with every slot already open (requests oftener than one per quarter hour, as a "
                     f"real month's are): {opened:,.0f}/s = {opened / theirs:,.0f}x, total {open_agree}; what "
                     f"pricing adds to the routing (this row's time less its floor's, next row, for the "
                     f"{result['month_tiered_records']:,} tiered records' lookups and cells and the dollars): "
                     f"{marginal * 1e6:.2f} us per request = {1 / marginal / theirs:,.0f}x")
    notes.append(f"the whole Pipeline.count_record over the same requests (months, dedupe, label caps, the "
                 f"record's other fields; each slot's month too), then cell_dollars per cell: {pipeline:,.0f}/s = "
                 f"{pipeline / theirs:,.0f}x, in {result[f'{prefix}pipeline_cells']:,} cells, total {pipeline_agree}")
    return Row(f"the exporter's pricing cost, {what}: per request its slot's price version, its route (an untiered "
               "model's holds its cell), a tiered model's lookup and cell, the cell sums; dollars once per cell; "
               "vs genai_prices.calc_price per request",
               f"{ours:,.0f}/s", f"{theirs:,.0f}/s", f"{ratio:,.0f}x", f">= {TARGET:.0f}x",
               verdict(ratio >= TARGET, f"{ratio / TARGET:.0%} of target"), notes)


def _stream_floor_row(result: dict[str, Any]) -> Row:
    floor, theirs = result["month_stream_floor_calls_per_s"], result["month_stream_genai_calls_per_s"]
    opened = result["month_stream_open_floor_calls_per_s"]
    return Row("loop floor of the month's pricing cost: the same slots, routes and cell sums, no lookup (a tiered "
               "model's records in its route's cell), no dollars", f"{floor:,.0f}/s", f"{theirs:,.0f}/s",
               f"{floor / theirs:,.0f}x", "-", "n/a",
               ["the ratio no pricing code can pass on that row in this run: what the pipeline does per record to "
                f"reach a cell whatever prices it ({1e6 / floor:.2f} us per request)",
                f"with every slot already open: {opened:,.0f}/s = {opened / theirs:,.0f}x"])


def rows(result: dict[str, Any]) -> list[Row]:
    figure = "pricing calls/s with tiers, each request on its own (lookup + cell_dollars) vs genai_prices.calc_price"
    if "skipped" in result:
        return [Row(figure, "-", "-", "-", f">= {TARGET:.0f}x", "skipped", [result["skipped"]])]
    out = []
    if "stream_calls_per_s" in result:  # a result saved before the stream rows existed has none
        out = [_stream_row(result, "month_",
                           f"a month of gateway traffic ({result['month_models']} models, half tiered)",
                           f"(one calendar month, {result['month']})")]
        if "month_stream_floor_calls_per_s" in result:
            out.append(_stream_floor_row(result))
        out.append(_stream_row(result, "", f"the benchmark's requests ({result['models']} models, 21 months)",
                               f"(by rates; {result['stream_month_cells']:,} split by month as the pipeline's "
                               "are): nearly one per request, the worst case for this way"))
    ratio = result["ours_calls_per_s"] / result["genai_calls_per_s"]
    notes = [f"genai-prices {result['genai_prices_version']}; {result['records']:,} requests over "
             f"{result['models']} models; dollars differ (> 1e-9 relative) on {result['differing_records']}",
             "what pricing each request on its own would cost: cell_dollars works out spend, savings, "
             "would-have-saved and the cache effects where calc_price works out one total; the exporter does not "
             "price this way (its cost is the rows above)"]
    floor, empty = result["floor_calls_per_s"], result.get("empty_calls_per_s", 0.0)
    ours_us, floor_us = 1e6 / result["ours_calls_per_s"], 1e6 / floor
    notes.append(f"ours {ours_us:.2f} us per request, of which {floor_us:.2f} us the loop floor (next row): "
                 f"lookup + cell_dollars take {ours_us - floor_us:.2f} us")
    return [*out,
            Row(figure, f"{result['ours_calls_per_s']:,.0f}/s", f"{result['genai_calls_per_s']:,.0f}/s",
                f"{ratio:,.0f}x", f">= {TARGET:.0f}x", verdict(ratio >= TARGET, f"{ratio / TARGET:.0%} of target"),
                notes),
            Row("loop floor of the per-request row: the same loop building the name and the cell, no lookup, "
                "no dollars", f"{floor:,.0f}/s", f"{result['genai_calls_per_s']:,.0f}/s",
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
