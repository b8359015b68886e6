"""Exposition: render time of /metrics, ours against prometheus_client's labelled counters.

    python -m tests.bench.bench_scrape [--series 1000 10000 100000]

Aggregates are filled with cells (month, model, tenant, method, rate) the way
the pipeline fills them (token tiers, savings by component, divergence),
enough cells to expose about N series; our ``Exposition.render`` writes the
text format 0.0.4. The peer holds the very same series: a private
``CollectorRegistry`` with one labelled ``Counter`` per family, each child
``inc()``'d to our value, rendered by ``generate_latest`` (``_created``
samples disabled, so both outputs carry the same series lines).

Cold: the first scrape (ours builds its label text and sums caches). Steady
state: 1 % of cells change between scrapes (ours: found by comparing cells;
the peer: the counters of the same share of children are ``inc()``'d); only
the render is timed. Scrapes alternate ours / peer; medians of CPU time.
Target: ours <= 1/5 of the peer's time at 10,000 series.

Cold, repeated (``--cold-runs``, default 5): each run is a first render with
nothing cached (a new ``Exposition``, the aggregates marked replaced, the
escaped-value cache emptied), alternated with one ``generate_latest`` of the
peer (which has no cache: every render of it is cold); medians of CPU time,
each after a full collection so neither side pays for the other's garbage.
A third figure is ours inside ``cold_render_gc``, as the sidecar serves a cold
frame (no garbage collection during the render).
Target: ours <= 1.0x the peer from 1,000 to 100,000 series. The peer's
version is printed: its per-sample cost differs between releases.
"""

from __future__ import annotations

import argparse
import gc
import re
import statistics
import sys
import time
from typing import Any

from exporter import catalog
from exporter.engine.aggregate import (
    CACHE_READ,
    CELL_WIDTH,
    FRESH,
    OUTPUT,
    REQUESTS,
    SAVED,
    WRITE_5M,
    Aggregates,
    CellKey,
    ComponentKey,
)
from exporter.engine.cells import BASE_COMPACTED
from exporter.engine.pipeline import MonthOf
from exporter.exposition import lines
from exporter.exposition.collector import cold_render_gc
from exporter.exposition.render import Exposition
from exporter.prices.table import PricedModel, load_price_table
from tests.bench.benchlib import ROOT, Row, verdict

PRICES = ROOT / "tests" / "fixtures" / "engine" / "prices_two_versions.yaml"
MODELS = ("alpha", "beta", "gamma", "delta", "epsilon")
METHODS = ("provider", "tiktoken:o200k_base", "tiktoken:cl100k_base", "estimate:chars/4")
COMPONENTS = ("history_trim", "tool_output")
TARGET = 5.0
COLD_TARGET = 1.0  # ours / the peer, cold, at every size
MONTH = "2026-11"


def fill(cells: int) -> Aggregates:
    """An Aggregates with ``cells`` priced cells, as ingest would leave it."""
    table = load_price_table(PRICES)
    agg = Aggregates()
    for i in range(cells):
        model = MODELS[i % len(MODELS)]
        method = METHODS[(i // len(MODELS)) % len(METHODS)]
        tenant = f"tenant-{i // (len(MODELS) * len(METHODS)):05d}"
        priced = table.lookup(model, 1_795_000_000.0)
        assert isinstance(priced, PricedModel)
        key = CellKey(MONTH, model, tenant, method, agg.rate_id(priced))
        cell = [0] * CELL_WIDTH
        cell[REQUESTS], cell[FRESH], cell[CACHE_READ], cell[WRITE_5M] = 10 + i % 7, 1000 * i, 500 * i, 10 * i
        cell[OUTPUT], cell[SAVED], cell[BASE_COMPACTED] = 300 * i, 700 * i, 2000 * i  # compacted: sent 1300 i
        agg.cells[key] = cell
        for j, component in enumerate(COMPONENTS):
            agg.components[ComponentKey(MONTH, model, tenant, method, component, key.rate_id)] = 300 * i + j
        if method != "provider":
            agg.divergence[(MONTH, model, method, "compacted")] = [1000 * i, 1100 * i]
    agg.dirty_all = True
    return agg


_SAMPLE = re.compile(r'^(\w+)(?:\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def peer_registry(text: str) -> tuple[Any, list[tuple[Any, float]]]:
    """A private prometheus_client registry holding exactly the series of ``text``."""
    from prometheus_client import CollectorRegistry, Counter, Gauge

    specs = {spec.name: spec for spec in catalog.CATALOG}
    registry = CollectorRegistry()
    metrics: dict[str, Any] = {}
    children: list[tuple[Any, float]] = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        assert match, line
        name, labels, value = match.group(1), match.group(2) or "", float(match.group(3))
        spec = specs[name]
        metric = metrics.get(name)
        if metric is None:
            kind = Counter if spec.type == "counter" else Gauge
            metric = metrics[name] = kind(spec.family_name, spec.help, spec.labels, registry=registry)
        child: Any = metric.labels(*[v for _k, v in _LABEL.findall(labels)]) if spec.labels else metric
        (child.inc if spec.type == "counter" else child.set)(value)
        children.append((child, value))
    return registry, children


def _series_lines(text: bytes) -> int:
    return sum(1 for line in text.split(b"\n") if line and not line.startswith(b"#"))


def cells_for(series: int) -> int:
    """Cells needed for about ``series`` exposed series (calibrated on a small fill)."""
    probe = 2000
    agg = fill(probe)
    lines = _series_lines(Exposition(MonthOf().start).render(agg, ()))
    return max(1, round(series * probe / lines))


def cold_runs(agg: Aggregates, registry: Any, runs: int) -> tuple[list[float], list[float], list[float]]:
    """CPU seconds of ``runs`` cold renders of ours, of the peer, and of ours as the sidecar serves a cold
    frame (inside ``cold_render_gc``: no collection during it), alternately (who goes first alternates)."""
    from prometheus_client import generate_latest

    ours: list[float] = []
    peer: list[float] = []
    served: list[float] = []
    for run in range(runs):
        for side in ("ours", "peer", "served") if run % 2 == 0 else ("served", "peer", "ours"):
            gc.collect()
            if side == "peer":
                started = time.process_time()
                generate_latest(registry)
                peer.append(time.process_time() - started)
                continue
            agg.dirty_all = True  # what a restore or a replaced aggregates does
            lines.escape_once.cache_clear()
            exposition = Exposition(MonthOf().start)
            started = time.process_time()
            if side == "ours":
                exposition.render(agg, ())
                ours.append(time.process_time() - started)
            else:
                with cold_render_gc(True):
                    exposition.render(agg, ())
                served.append(time.process_time() - started)
                gc.unfreeze()  # the next run's heap as the others see it
    return ours, peer, served


def measure(series: int, scrapes: int = 7, cold: int = 5) -> dict[str, float]:
    from prometheus_client import disable_created_metrics, generate_latest

    disable_created_metrics()  # type: ignore[no-untyped-call]
    agg = fill(cells_for(series))
    keys = list(agg.cells)
    exposition = Exposition(MonthOf().start)
    started = time.process_time()
    text = exposition.render(agg, ())
    ours_cold = time.process_time() - started
    registry, children = peer_registry(text.decode())
    n_series = _series_lines(text)
    started = time.process_time()
    peer_text = generate_latest(registry)
    peer_cold = time.process_time() - started
    assert _series_lines(peer_text) == n_series, (_series_lines(peer_text), n_series)
    ours_colds, peer_colds, served_colds = cold_runs(agg, registry, cold)
    exposition.render(agg, ())  # the steady loop below starts from a render of these very cells

    step = 100  # 1 % of cells / children per scrape
    ours_t: list[float] = []
    peer_t: list[float] = []
    for scrape in range(scrapes):
        for key in keys[scrape % step::step]:
            agg.cells[key][REQUESTS] += 1
        for child, _value in children[scrape % step::step]:
            if hasattr(child, "inc"):
                child.inc(1)
        order = ("ours", "peer") if scrape % 2 == 0 else ("peer", "ours")
        for side in order:
            started = time.process_time()
            if side == "ours":
                exposition.render(agg, ())
                ours_t.append(time.process_time() - started)
            else:
                generate_latest(registry)
                peer_t.append(time.process_time() - started)
    return {
        "series": n_series, "cells": len(keys),
        "ours_cold": ours_cold, "peer_cold": peer_cold,
        "ours_steady": statistics.median(ours_t), "peer_steady": statistics.median(peer_t),
        "ours_cold_median": statistics.median(ours_colds), "peer_cold_median": statistics.median(peer_colds),
        "served_cold_median": statistics.median(served_colds),
        "cold_ratio_min": min(o / p for o, p in zip(ours_colds, peer_colds, strict=True)),
        "cold_ratio_max": max(o / p for o, p in zip(ours_colds, peer_colds, strict=True)),
    }


def peer_version() -> str:
    from importlib.metadata import version

    return version("prometheus_client")


def run(sizes: tuple[int, ...] = (1000, 10_000, 100_000), cold: int = 5) -> list[Row]:
    rows: list[Row] = []
    print(f"  peer: prometheus_client {peer_version()}", flush=True)
    for size in sizes:
        r = measure(size, scrapes=7 if size <= 10_000 else 5, cold=cold)
        print(f"  scrape {r['series']:>7,} series ({r['cells']:,} cells): cold ours {r['ours_cold'] * 1e3:.1f} ms "
              f"peer {r['peer_cold'] * 1e3:.1f} ms; steady ours {r['ours_steady'] * 1e3:.1f} ms "
              f"peer {r['peer_steady'] * 1e3:.1f} ms", flush=True)
        for phase in ("cold", "steady"):
            ours, peer = r[f"ours_{phase}"], r[f"peer_{phase}"]
            share = ours / peer
            checked = size == 10_000 and phase == "steady"  # the cold scrape builds the caches once
            rows.append(Row(
                f"render {r['series']:,} series, {phase}" + (" (1% cells updated)" if phase == "steady" else ""),
                f"{ours * 1e3:.1f} ms", f"{peer * 1e3:.1f} ms (prometheus_client)", f"{share:.2f}",
                "<= 0.20" if checked else "-",
                verdict(share <= 1 / TARGET, f"{share / 0.2:.1f}x the bound") if checked else "n/a",
            ))
        ours, peer = r["ours_cold_median"], r["peer_cold_median"]
        share = ours / peer
        served = r["served_cold_median"]
        print(f"  cold {r['series']:>7,} series, median of {cold}: ours {ours * 1e3:.1f} ms peer {peer * 1e3:.1f} ms "
              f"ratio {share:.2f} (runs {r['cold_ratio_min']:.2f}-{r['cold_ratio_max']:.2f}); as the sidecar serves "
              f"it (no collection) {served * 1e3:.1f} ms, ratio {served / peer:.2f}", flush=True)
        rows.append(Row(
            f"render {r['series']:,} series, cold, median of {cold} (nothing cached)",
            f"{ours * 1e3:.1f} ms", f"{peer * 1e3:.1f} ms (prometheus_client {peer_version()})", f"{share:.2f}",
            f"<= {COLD_TARGET:.2f}", verdict(share <= COLD_TARGET, f"{share:.2f}x the peer"),
            [f"per-run ratios {r['cold_ratio_min']:.2f}-{r['cold_ratio_max']:.2f}; inside cold_render_gc, as the "
             f"sidecar serves a cold frame: {served * 1e3:.1f} ms ({served / peer:.2f})"],
        ))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--cold-runs", type=int, default=5, help="cold renders per side (medians)")
    args = parser.parse_args(argv)
    for row in run(tuple(args.series), args.cold_runs):
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
