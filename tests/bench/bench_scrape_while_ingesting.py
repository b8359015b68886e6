"""Scrapes during catch-up ingestion, ingestion during a cold render: who waits for whom.

    python -m tests.bench.bench_scrape_while_ingesting [--lines 100000] [--series 100000]

Two figures, each measured against the old behaviour in the same run:

1. **Scrape lock wait during catch-up.** A real ``Sidecar`` (no threads started)
   catches up on a backlog of ``--lines`` record lines with ``ingest_once``
   in a thread while another thread scrapes ``Sidecar.metrics`` back to back;
   each scrape's wait for the pipeline lock is timed. Sliced ingestion
   (``ingest_slice_lines`` = 2000, the default) against one lock for a whole
   pass (slice = 20,000 lines, what ``ingest_once`` did before).
2. **Ingestion stall during a cold render.** The sidecar's aggregates hold
   about ``--series`` series (``bench_scrape.fill``); an ingest thread feeds
   lines in small slices and notes when each slice ends; a cold scrape runs.
   The stall is the longest gap between two slice ends while the render runs.
   ``Sidecar.metrics`` (frame copied under the lock, rendered outside) against
   rendering under the lock (what ``metrics`` did before).

Targets: a scrape waits <= 100 ms for the lock; a cold render of 100k series
stops ingestion <= 100 ms. Not a timed unit test: it prints the figures.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import tempfile
import threading
import time
from pathlib import Path

from exporter.exposition.render import Exposition
from exporter.sidecar.sidecar import Sidecar
from tests.bench.bench_scrape import cells_for, fill
from tests.support.sidecar import WALL, make_config, record_line

TARGET_MS = 100.0


def _sidecar(tmp: Path, lines: int, slice_lines: int) -> Sidecar:
    logs = tmp / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / "a.jsonl"
    if not log.exists():
        with open(log, "wb") as f:
            f.writelines(record_line(i, ts=WALL - 86_400 + i % 80_000) for i in range(lines))
    return Sidecar(make_config(tmp, state_dir=str(tmp / f"state-{slice_lines}"), ingest_slice_lines=slice_lines),
                   wall_clock=lambda: WALL)


def scrape_wait(tmp: Path, lines: int, slice_lines: int) -> dict[str, float]:
    """Max and median lock wait of back-to-back scrapes while a backlog is ingested."""
    sidecar = _sidecar(tmp, lines, slice_lines)
    done = threading.Event()
    waits: list[float] = []
    latencies: list[float] = []

    def scraper() -> None:
        lock = sidecar.pipeline.lock
        while not done.is_set():
            start = time.perf_counter()
            lock.acquire()
            waits.append(time.perf_counter() - start)
            lock.release()
            start = time.perf_counter()
            sidecar.metrics(None)
            latencies.append(time.perf_counter() - start)

    thread = threading.Thread(target=scraper)
    started = time.perf_counter()
    thread.start()
    consumed = 0
    while True:
        got = sidecar.ingest_once()
        consumed += got
        if not got:
            break
    elapsed = time.perf_counter() - started
    done.set()
    thread.join()
    sidecar.close()
    assert consumed == lines, consumed
    waits.sort()
    return {"max_wait": waits[-1], "median_wait": waits[len(waits) // 2], "scrapes": len(waits),
            "max_scrape": max(latencies), "catch_up": elapsed}


def render_stall(tmp: Path, series: int, under_lock: bool) -> dict[str, float]:
    """Longest gap between ingestion slices while a cold render of ``series`` series runs."""
    sidecar = _sidecar(tmp, 0, 200)  # the backlog scrape_wait wrote
    with sidecar.pipeline.lock:
        sidecar.pipeline.aggregates = fill(cells_for(series))
    sidecar.exposition = Exposition(sidecar.pipeline.month_of.start)
    ends: list[float] = []
    stop = threading.Event()

    def ingest() -> None:
        while not stop.is_set():
            if sidecar.ingest_once(max_lines=200):
                ends.append(time.perf_counter())

    pauses: list[float] = []
    gc_start = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:  # collections stop every thread, lock or not
        if phase == "start":
            gc_start[0] = time.perf_counter()
        else:
            pauses.append(time.perf_counter() - gc_start[0])

    thread = threading.Thread(target=ingest)
    thread.start()
    time.sleep(0.2)  # benchmark warm-up: let ingestion reach its pace before the render
    gc.callbacks.append(on_gc)
    start = time.perf_counter()
    if under_lock:  # before: the whole render held the pipeline lock
        with sidecar.pipeline.lock:
            body = sidecar.exposition.render(sidecar.pipeline.aggregates, sidecar.health_samples())
    else:
        body, _ = sidecar.metrics(None)
    finish = time.perf_counter()
    gc.callbacks.remove(on_gc)
    time.sleep(0.1)
    stop.set()
    thread.join()
    sidecar.close()
    before = [t for t in ends if t < start]
    stamps = [*before[-1:], *(t for t in ends if start <= t), finish]
    gaps = [b - a for a, b in itertools.pairwise(stamps) if a <= finish]
    lines = body.count(b"\n") - body.count(b"\n#")
    return {"stall": max(gaps), "render": finish - start, "series": lines, "gc": max(pauses, default=0.0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--series", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        sliced = scrape_wait(tmp, args.lines, 2000)
        whole = scrape_wait(tmp, args.lines, 20_000)
        print(f"scrape during catch-up of {args.lines:,} lines "
              f"({sliced['scrapes']} / {whole['scrapes']} scrapes):")
        print(f"  sliced (2000 lines): max lock wait {sliced['max_wait'] * 1e3:.1f} ms, "
              f"median {sliced['median_wait'] * 1e3:.2f} ms, max scrape {sliced['max_scrape'] * 1e3:.1f} ms, "
              f"catch-up {sliced['catch_up']:.2f} s")
        print(f"  whole pass (20000):  max lock wait {whole['max_wait'] * 1e3:.1f} ms, "
              f"median {whole['median_wait'] * 1e3:.2f} ms, max scrape {whole['max_scrape'] * 1e3:.1f} ms, "
              f"catch-up {whole['catch_up']:.2f} s")
        print(f"  ratio whole/sliced max wait: {whole['max_wait'] / sliced['max_wait']:.1f}x; "
              f"target <= {TARGET_MS:.0f} ms: {'met' if sliced['max_wait'] * 1e3 <= TARGET_MS else 'MISSED'}")
        outside = render_stall(tmp, args.series, under_lock=False)
        inside = render_stall(tmp, args.series, under_lock=True)
        print(f"ingestion during a cold render of {outside['series']:,} series:")
        print(f"  frame + render outside the lock: max stall {outside['stall'] * 1e3:.1f} ms "
              f"(render {outside['render'] * 1e3:.0f} ms; longest garbage collection in it "
              f"{outside['gc'] * 1e3:.1f} ms)")
        print(f"  render under the lock (before):  max stall {inside['stall'] * 1e3:.1f} ms "
              f"(render {inside['render'] * 1e3:.0f} ms)")
        print(f"  ratio before/after stall: {inside['stall'] / outside['stall']:.1f}x; "
              f"target <= {TARGET_MS:.0f} ms: {'met' if outside['stall'] * 1e3 <= TARGET_MS else 'MISSED'}")


if __name__ == "__main__":
    main()
