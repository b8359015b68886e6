"""Bytes per entry of the OTLP correlation memory. Run: ``python -m tests.bench.bench_correlation_memory``.

Sizes ``otlp.correlation_max_entries`` (docs/telemetry.md): requests of 512
spans shaped like ``tests/bench/bench_otlp.py``'s (new span ids every
request, two thirds model calls) are mapped through one ``MappingOptions``,
as the receiver maps them, until the memory holds ``--entries`` entries, and
then as many again (the cap forgetting the oldest). ``tracemalloc`` measures
what the memory holds after each phase (the mapped records dropped, a full
collection run), divided by its entries. Also printed: entries a request adds
and how long the memory lasts at 1,000 and 45,000 spans/s.
"""

from __future__ import annotations

import argparse
import gc
import json
import tracemalloc

from exporter.sources.otlp.correlator import SpanCorrelator
from exporter.sources.otlp.mapping import map_protobuf
from exporter.sources.otlp.spans import CORRELATION_MAX_ENTRIES, MappingOptions
from tests.bench.bench_otlp import BATCH, build_batch


def _held(options: MappingOptions, baseline: int) -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0] - baseline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=CORRELATION_MAX_ENTRIES)
    args = parser.parse_args()
    options = MappingOptions(correlation_max_entries=args.entries)
    warm = MappingOptions()
    map_protobuf(build_batch(0)[0], warm)  # the mapping's own caches, outside the measure
    per_request = warm._memory["correlator"].held
    requests = 2 * (args.entries // per_request + 1)
    bodies = [build_batch(seed)[0] for seed in range(1, requests + 1)]
    tracemalloc.start()
    gc.collect()
    baseline = tracemalloc.get_traced_memory()[0]
    figures: dict[str, float] = {"entries_per_request": per_request, "spans_per_request": BATCH}
    for phase, chunk in (("filled", bodies[: requests // 2]), ("after_as_many_again", bodies[requests // 2:])):
        for body in chunk:
            map_protobuf(body, options)
        correlator = options._memory["correlator"]
        assert isinstance(correlator, SpanCorrelator)
        held = _held(options, baseline)
        entries = correlator.held
        figures[f"{phase}_entries"] = entries
        figures[f"{phase}_bytes_per_entry"] = round(held / entries, 1)
        figures[f"{phase}_evicted_early"] = correlator.evicted_early
    tracemalloc.stop()
    per_span = per_request / BATCH
    for rate in (1_000, 45_000):
        figures[f"lasts_seconds_at_{rate}_spans_per_s"] = round(min(120.0, args.entries / (per_span * rate)), 2)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
