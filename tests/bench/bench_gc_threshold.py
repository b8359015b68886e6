"""The collector's young threshold (``gc_young_threshold``) under OTLP load: CPU, pauses, memory.

Run by hand (never collected by pytest)::

    python -m tests.bench.bench_gc_threshold [--rounds 3] [--batches 80]

Each threshold runs in a fresh process (so its memory high-water mark is its own), the thresholds
taken in turn, ``--rounds`` times (so each sees the same load on a shared machine). In each, the
receiver is run as ``tests/bench/bench_otlp.py`` runs it (start-up state frozen as ``Sidecar.start``
does, four client processes, batches of 512), protobuf then OTLP/JSON, with the young threshold set
as ``Sidecar.start`` sets it (``set_young_threshold``). Printed per threshold, medians over the rounds:
spans/s, the receiver's CPU per span, the collector's CPU per span, the longest single collection
(CPU of the thread that ran it: the pause every other thread waits out) and the process's resident
memory: its high-water mark over the runs, against the same process before the first run.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from exporter.exposition.collector import freeze_long_lived, set_young_threshold  # noqa: E402
from exporter.sidecar.config import Config  # noqa: E402

THRESHOLDS = (700, 10_000, Config().gc_young_threshold, 200_000)
KINDS = (("protobuf", "application/x-protobuf"), ("OTLP/JSON", "application/json"))


class Pauses:
    """Each collection's CPU on the thread that ran it (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._began = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.thread_time()
        else:
            self.longest = max(self.longest, time.thread_time() - self._began)


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one(threshold: int, batches: int) -> dict[str, Any]:
    """Both kinds over loopback at ``threshold``, in this process: the figures as a dict."""
    from tests.bench import bench_otlp

    built = [bench_otlp.build_batch(seed) for seed in range(batches)]
    bodies = {"protobuf": [body for body, _ in built]}
    bodies["OTLP/JSON"] = [bench_otlp.to_json(body) for body in bodies["protobuf"]]
    calls = built[0][1]
    gc.collect()
    before_mib = _rss_mib()
    figures: dict[str, Any] = {"threshold": threshold, "rss_before_mib": before_mib}
    previous = set_young_threshold(threshold)
    try:
        for kind, content_type in KINDS:
            pauses = Pauses()
            run: dict[str, float] = {}
            freeze_long_lived()  # as Sidecar.start (and over_loopback) does; its own full collection not timed
            gc.callbacks.append(pauses)
            try:
                rate = bench_otlp.over_loopback(f"{kind}, young threshold {threshold}", bodies[kind], calls,
                                                {"Content-Type": content_type}, figures=run, freeze=False)
            finally:
                gc.callbacks.remove(pauses)
                gc.unfreeze()
            figures[kind] = {"rate": rate, "cpu_us": run["cpu_us"], "gc_us": run["gc_us"],
                             "longest_ms": 1e3 * pauses.longest}
    finally:
        set_young_threshold(previous)
    figures["rss_peak_mib"] = _rss_mib()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", type=int, default=80, help="export requests per run (multiple of 4)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child: one threshold, JSON out
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(one(args.one, args.batches)))
        return 0
    runs: dict[int, list[dict[str, Any]]] = {threshold: [] for threshold in THRESHOLDS}
    for _ in range(args.rounds):
        for threshold in THRESHOLDS:
            out = subprocess.run([sys.executable, "-m", "tests.bench.bench_gc_threshold", "--one", str(threshold),
                                  "--batches", str(args.batches)], cwd=ROOT, check=True, capture_output=True,
                                 text=True).stdout
            runs[threshold].append(json.loads(out.splitlines()[-1]))
    print(f"young threshold: medians of {args.rounds} runs, each threshold in a fresh process "
          f"({args.batches} requests of 512 spans per kind; the sidecar's default is {THRESHOLDS[2]:,})")
    for kind, _ in KINDS:
        for threshold, results in runs.items():
            def med(field: str, results: list[dict[str, Any]] = results, kind: str = kind) -> float:
                return statistics.median(r[kind][field] for r in results)
            print(f"{kind:<9} {threshold:>7,}: {med('rate'):>8,.0f} spans/s, receiver CPU {med('cpu_us'):5.2f} us "
                  f"per span, of which the collector {med('gc_us'):4.2f} us; longest collection "
                  f"{med('longest_ms'):5.1f} ms CPU")
    for threshold, results in runs.items():
        before = statistics.median(r["rss_before_mib"] for r in results)
        peak = statistics.median(r["rss_peak_mib"] for r in results)
        print(f"resident memory at {threshold:>7,}: {before:.0f} MiB before the runs, high-water {peak:.0f} MiB "
              f"(+{peak - before:.0f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
