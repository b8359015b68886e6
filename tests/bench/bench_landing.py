"""The landing page's cost: how long it holds the ingestion lock, and how long the whole page takes.

    python -m tests.bench.bench_landing [--cells 1000 10000 100000] [--runs 5]

For aggregates of ``--cells`` priced cells (``bench_scrape.fill``, as ingest leaves them), the
median over ``--runs`` of: the time ``/`` holds the pipeline lock now (``report.live.snapshot``:
the tables copied, nothing computed), the time the page held it before (the month totals
computed under the lock, ``Sidecar.summary``), and the whole page (copy, totals, breakdowns,
HTML) as the server thread spends it.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from types import SimpleNamespace, TracebackType

from exporter.engine.pipeline import Pipeline
from exporter.prices.table import load_price_table
from exporter.report.live import landing_page
from tests.bench.bench_scrape import PRICES, fill


class _TimedLock:
    """A lock that notes how long each hold lasted."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.holds: list[float] = []
        self._since = 0.0

    def __enter__(self) -> None:
        self.lock.acquire()
        self._since = time.perf_counter()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.holds.append(time.perf_counter() - self._since)
        self.lock.release()


def measure(cells: int, runs: int) -> dict[str, float]:
    pipeline = Pipeline(load_price_table(PRICES), aggregates=fill(cells))
    lock = _TimedLock()
    pipeline.lock = lock  # type: ignore[assignment]
    sidecar = SimpleNamespace(pipeline=pipeline, wall=lambda: 1_795_000_000.0)
    before, pages = [], []
    for _ in range(runs):
        with lock:
            pipeline.aggregates.month_totals()  # what the page computed under the lock before
        before.append(lock.holds.pop())
        start = time.perf_counter()
        landing_page(sidecar)  # type: ignore[arg-type]
        pages.append(time.perf_counter() - start)
    now = lock.holds
    return {"lock_now_ms": statistics.median(now) * 1e3, "lock_before_ms": statistics.median(before) * 1e3,
            "page_ms": statistics.median(pages) * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print("| cells | lock held now | lock held before | whole page |")
    print("|---:|---:|---:|---:|")
    for cells in args.cells:
        r = measure(cells, args.runs)
        print(f"| {cells:,} | {r['lock_now_ms']:.1f} ms | {r['lock_before_ms']:.1f} ms | {r['page_ms']:.0f} ms |")


if __name__ == "__main__":
    main()
