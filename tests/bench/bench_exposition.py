"""Scrape cost: our ``Exposition.render`` vs prometheus_client, at 1k / 10k / 100k series.

Run by hand (never collected): ``python tests/bench/bench_exposition.py [--sizes 1000,10000]``.

For each size the aggregates are filled through the real ``Pipeline`` with
enough (model, tenant) cells to give about that many series in our text
exposition; prometheus_client gets *the same series* (parsed back from our
text) as standard labelled ``Counter``/``Gauge`` children in a private
``CollectorRegistry``, rendered with ``generate_latest``. Two measurements:

* cold: the first render (ours builds every label text and sum);
* steady: the render after ~1% of the cells were updated (ours re-sums only the
  dirty series; prometheus_client re-renders everything, as always).

Target: ours <= 1/5 of prometheus_client at 10,000 series (steady state).
prometheus_client's text output also carries a ``_created`` line per counter
child (ours only in OpenMetrics), so a second figure runs it with
``disable_created_metrics()`` - the same number of lines as ours.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import prometheus_client  # noqa: E402
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from exporter import catalog  # noqa: E402
from exporter.engine.aggregate import REQUESTS, SAVED  # noqa: E402
from exporter.engine.cells import BASE_COMPACTED  # noqa: E402
from exporter.engine.labels import LabelCaps  # noqa: E402
from exporter.engine.pipeline import Pipeline  # noqa: E402
from exporter.exposition.render import Exposition  # noqa: E402
from exporter.prices.table import load_price_table  # noqa: E402

NOV = 1_793_491_200
MODELS = ("gpt-4o", "claude-sonnet-4-5", "gpt-4o-mini", "unpriced-model")
SERIES_PER_CELL = 11.3  # measured mean over MODELS (the unpriced model has no dollar series)


def build(series: int) -> Pipeline:
    cells = max(1, round(series / SERIES_PER_CELL))
    tenants = max(1, cells // len(MODELS))
    pipeline = Pipeline(load_price_table(None), caps=LabelCaps(max_models=1000, max_tenants=100_000))
    rng = random.Random(1)
    for i in range(cells):
        record = {
            "ts": NOV + 3600 + i, "request_id": f"r-{i}", "model": MODELS[i % len(MODELS)],
            "tenant": f"tenant-{i // len(MODELS) % tenants}", "tokens_before": 1000 + rng.randrange(500),
            "tokens_after": 600, "count_method": "tiktoken:o200k_base",
            "usage": {"prompt_tokens": 700, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 300}},
        }
        pipeline.ingest_object(record, "bench")
    return pipeline


def mirror(text: str) -> tuple[CollectorRegistry, list[Any]]:
    """The same series as standard prometheus_client metrics in a private registry."""
    registry = CollectorRegistry()
    children: list[Any] = []
    for family in text_string_to_metric_families(text):
        if not family.samples:
            continue
        spec = catalog.BY_NAME.get(family.name) or catalog.BY_NAME.get(family.name + "_total")
        assert spec is not None, family.name
        labelnames = list(spec.labels)
        if spec.type == "counter":
            metric: Any = Counter(spec.family_name, spec.help, labelnames, registry=registry)
        else:
            metric = Gauge(spec.name, spec.help, labelnames, registry=registry)
        for sample in family.samples:
            child = metric.labels(*[sample.labels[n] for n in labelnames]) if labelnames else metric
            if spec.type == "counter":
                child.inc(sample.value)
            else:
                child.set(sample.value)
            children.append((spec.type, child))
    return registry, children


def best_of(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def update_cells(pipeline: Pipeline, share: float, rng: random.Random) -> None:
    agg = pipeline.aggregates
    keys = list(agg.cells)
    for key in rng.sample(keys, max(1, int(len(keys) * share))):
        cell = agg.cells[key]
        cell[REQUESTS] += 1
        cell[SAVED] += 10
        cell[BASE_COMPACTED] += 30  # a compacted record: 30 before, 20 sent


def run(size: int, repeat: int) -> dict[str, float]:
    pipeline = build(size)
    agg = pipeline.aggregates
    exposition = Exposition(pipeline.month_of.start)
    text = exposition.render(agg, ()).decode()
    registry, children = mirror(text)
    lines = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    theirs_text = generate_latest(registry).decode()
    their_lines = sum(1 for line in theirs_text.splitlines() if line and not line.startswith("#"))

    def ours_cold() -> None:
        agg.dirty_all = True
        Exposition(pipeline.month_of.start).render(agg, ())

    rng = random.Random(2)

    def ours_steady() -> None:
        update_cells(pipeline, 0.01, rng)
        exposition.render(agg, ())

    counters = [c for kind, c in children if kind == "counter"]

    def theirs_steady() -> None:
        for child in rng.sample(counters, max(1, len(counters) // 100)):
            child.inc(1)
        generate_latest(registry)

    result = {
        "series": lines,
        "their_lines": their_lines,
        "ours_cold": best_of(ours_cold, repeat),
        "theirs_cold": best_of(lambda: generate_latest(registry), repeat),
        "ours_steady": best_of(ours_steady, repeat),
        "theirs_steady": best_of(theirs_steady, repeat),
    }
    prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]
    try:
        result["theirs_cold_no_created"] = best_of(lambda: generate_latest(registry), repeat)
        result["theirs_steady_no_created"] = best_of(theirs_steady, repeat)
    finally:
        prometheus_client.enable_created_metrics()  # type: ignore[no-untyped-call]
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"{'series':>8} {'ours cold':>10} {'pc cold':>10} {'ratio':>6} | {'ours 1%':>10} {'pc 1%':>10} "
          f"{'ratio':>6} || without _created: {'pc cold':>10} {'ratio':>6} | {'pc 1%':>10} {'ratio':>6}")
    for size in (int(s) for s in args.sizes.split(",")):
        r = run(size, args.repeat)
        print(f"{int(r['series']):>8} {r['ours_cold'] * 1e3:>8.2f}ms {r['theirs_cold'] * 1e3:>8.2f}ms "
              f"{r['ours_cold'] / r['theirs_cold']:>6.3f} | {r['ours_steady'] * 1e3:>8.2f}ms "
              f"{r['theirs_steady'] * 1e3:>8.2f}ms {r['ours_steady'] / r['theirs_steady']:>6.3f} | "
              f"{'':>18} {r['theirs_cold_no_created'] * 1e3:>8.2f}ms "
              f"{r['ours_cold'] / r['theirs_cold_no_created']:>6.3f} | "
              f"{r['theirs_steady_no_created'] * 1e3:>8.2f}ms "
              f"{r['ours_steady'] / r['theirs_steady_no_created']:>6.3f}")
    print("ratio = ours / prometheus_client (target at 10,000 series: <= 0.2)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
