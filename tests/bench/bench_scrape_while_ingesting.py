"""Scrapes during catch-up ingestion, ingestion during a cold render: who waits for whom.

    python -m tests.bench.bench_scrape_while_ingesting [--lines 100000] [--series 100000] [--runs 3]

Each figure is measured against the old behaviour in the same run, the
behaviours alternated ``--runs`` times; medians are printed, with each run's
figure in brackets:

1. **Scrape lock wait during catch-up.** A real ``Sidecar`` (no threads started)
   catches up on a backlog of ``--lines`` record lines with ``ingest_once``
   in a thread while another thread scrapes ``Sidecar.metrics`` back to back;
   each scrape's wait for the pipeline lock is timed. Sliced ingestion
   (``ingest_slice_lines`` = 2000, the default) against one lock for a whole
   pass (slice = 20,000 lines, what ``ingest_once`` did before).
2. **Ingestion stall during a cold render.** The sidecar's aggregates hold
   about ``--series`` series (``bench_scrape.fill``); an ingest thread feeds
   lines in small slices and notes when each slice ends; a cold scrape runs.
   The stall is the longest gap between two slice ends from the render's
   start to 250 ms after its end (a collection the render leaves behind stalls
   too); ``gc`` is the longest garbage collection in that run (``gc.callbacks``),
   which pauses every thread, lock or not. ``Sidecar.metrics`` now (frame
   copied under the lock, rendered outside with the collector off, then
   ``gc.freeze``; the restored state frozen first, as ``Sidecar.start`` does)
   against the same without the collector handling, and against rendering
   under the lock (before the frame).
3. **Memory over repeated cold renders** (``--renders``, 20): RSS after each,
   ingestion running, with and without the freezes; then how many objects a
   collection finds unreachable once everything is unfrozen (garbage cycles a
   freeze kept: a leak).

Targets: a scrape waits <= 100 ms for the lock; a cold render of 100k series
stops ingestion <= 100 ms. Not a timed unit test: it prints the figures.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import statistics
import tempfile
import threading
import time
from pathlib import Path

from exporter.exposition.collector import freeze_long_lived
from exporter.exposition.render import Exposition
from exporter.sidecar.sidecar import Sidecar
from tests.bench.bench_scrape import cells_for, fill
from tests.bench.benchlib import rss_mb
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


RENDER_MODES = ("new", "previous", "locked")
MODE_NAMES = {
    "new": "frame + render outside the lock, collector off + freeze (now)",
    "previous": "frame + render outside the lock, collector as is         ",
    "locked": "render under the lock (before the frame)                  ",
}
AFTERMATH = 0.25  # s after the render still counted: a collection the render left behind stalls too


def _loaded_sidecar(tmp: Path, series_cells: int) -> Sidecar:
    """A sidecar whose aggregates hold ``series_cells`` cells, as after a restore (not started: no threads)."""
    sidecar = _sidecar(tmp, 0, 200)  # the backlog scrape_wait wrote
    with sidecar.pipeline.lock:
        sidecar.pipeline.aggregates = fill(series_cells)
    sidecar.exposition = Exposition(sidecar.pipeline.month_of.start)
    return sidecar


def render_stall(tmp: Path, cells: int, mode: str) -> dict[str, float]:
    """Longest gap between ingestion slices while a cold render of ``cells`` cells runs (and just after)."""
    gc.unfreeze()  # every run starts from the same heap: nothing frozen by an earlier run
    gc.collect()
    sidecar = _loaded_sidecar(tmp, cells)
    if mode == "new":
        freeze_long_lived()  # what Sidecar.start does after the restore
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
    if mode == "new":
        body, _ = sidecar.metrics(None)
    elif mode == "previous":  # Sidecar.metrics before cold_render_gc
        with sidecar.pipeline.lock:
            health = sidecar.health_samples()
            frame = sidecar.exposition.take(sidecar.pipeline.aggregates)
        body = sidecar.exposition.render_frame(frame, health)
        del frame
    else:  # before the frame: the whole render held the pipeline lock
        with sidecar.pipeline.lock:
            body = sidecar.exposition.render(sidecar.pipeline.aggregates, sidecar.health_samples())
    finish = time.perf_counter()
    time.sleep(AFTERMATH + 0.1)
    gc.callbacks.remove(on_gc)
    stop.set()
    thread.join()
    sidecar.close()
    before = [t for t in ends if t < start]
    stamps = [*before[-1:], *(t for t in ends if start <= t)]
    gaps = [b - a for a, b in itertools.pairwise(stamps) if a <= finish + AFTERMATH]
    lines = body.count(b"\n") - body.count(b"\n#")
    return {"stall": max(gaps), "render": finish - start, "series": lines, "gc": max(pauses, default=0.0)}


def cold_render_memory(tmp: Path, cells: int, renders: int, freeze: bool) -> tuple[list[float], int, int]:
    """RSS (MB) after each of ``renders`` cold scrapes, ingestion running; frozen objects; frozen cyclic garbage.

    ``freeze``: ``Sidecar.metrics`` as it is now; otherwise with the collector as is
    (what ``metrics`` did before ``cold_render_gc``). The last figure is what a
    collection finds unreachable once everything is unfrozen: garbage cycles the
    freezes kept (a leak), 0 if none.
    """
    gc.unfreeze()
    gc.collect()
    sidecar = _loaded_sidecar(tmp, cells)
    if freeze:
        freeze_long_lived()
    stop = threading.Event()

    def ingest() -> None:
        while not stop.is_set():
            if not sidecar.ingest_once(max_lines=200):
                time.sleep(0.001)

    thread = threading.Thread(target=ingest)
    thread.start()
    rss: list[float] = []
    for _ in range(renders):
        with sidecar.pipeline.lock:
            sidecar.pipeline.aggregates.dirty_all = True  # what a restore or a dropped month sets: a cold render
        if freeze:
            sidecar.metrics(None)
        else:
            with sidecar.pipeline.lock:
                health = sidecar.health_samples()
                frame = sidecar.exposition.take(sidecar.pipeline.aggregates)
            sidecar.exposition.render_frame(frame, health)
            del frame
        rss.append(rss_mb())
    stop.set()
    thread.join()
    frozen = gc.get_freeze_count()
    gc.unfreeze()
    leaked = gc.collect()
    sidecar.close()
    return rss, frozen, leaked


def _ms_each(runs: list[dict[str, float]], key: str) -> str:
    return " ".join(f"{run[key] * 1e3:.0f}" for run in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--series", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3, help="runs per behaviour (alternated) of each figure")
    parser.add_argument("--renders", type=int, default=20, help="cold renders of the memory check")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        waits: dict[int, list[dict[str, float]]] = {2000: [], 20_000: []}
        for _ in range(args.runs):
            for slice_lines, found in waits.items():  # alternated
                found.append(scrape_wait(tmp, args.lines, slice_lines))
        sliced, whole = ({key: statistics.median(run[key] for run in found) for key in found[0]}
                         for found in waits.values())
        print(f"scrape during catch-up of {args.lines:,} lines (medians of {args.runs} alternating runs; "
              f"{sliced['scrapes']:.0f} / {whole['scrapes']:.0f} scrapes):")
        print(f"  sliced (2000 lines): max lock wait {sliced['max_wait'] * 1e3:.1f} ms "
              f"[{_ms_each(waits[2000], 'max_wait')}], "
              f"median {sliced['median_wait'] * 1e3:.2f} ms, max scrape {sliced['max_scrape'] * 1e3:.1f} ms, "
              f"catch-up {sliced['catch_up']:.2f} s")
        print(f"  whole pass (20000):  max lock wait {whole['max_wait'] * 1e3:.1f} ms "
              f"[{_ms_each(waits[20_000], 'max_wait')}], "
              f"median {whole['median_wait'] * 1e3:.2f} ms, max scrape {whole['max_scrape'] * 1e3:.1f} ms, "
              f"catch-up {whole['catch_up']:.2f} s")
        print(f"  ratio whole/sliced max wait: {whole['max_wait'] / sliced['max_wait']:.1f}x; "
              f"target <= {TARGET_MS:.0f} ms: {'met' if sliced['max_wait'] * 1e3 <= TARGET_MS else 'MISSED'}")
        cells = cells_for(args.series)
        runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in RENDER_MODES}
        for _ in range(args.runs):
            for mode in RENDER_MODES:  # alternated, so load on the shared machine hits all alike
                runs[mode].append(render_stall(tmp, cells, mode))
        medians = {mode: {key: statistics.median(run[key] for run in found) for key in found[0]}
                   for mode, found in runs.items()}
        print(f"ingestion during a cold render of {int(medians['new']['series']):,} series "
              f"(medians of {args.runs} alternating runs; stall counted to {AFTERMATH * 1e3:.0f} ms after the render; "
              f"gc = longest garbage collection in the run):")
        for mode in RENDER_MODES:
            found, median = runs[mode], medians[mode]
            print(f"  {MODE_NAMES[mode]}: max stall {median['stall'] * 1e3:6.1f} ms "
                  f"[{_ms_each(found, 'stall')}], "
                  f"gc {median['gc'] * 1e3:5.1f} ms [{_ms_each(found, 'gc')}], "
                  f"render {median['render'] * 1e3:.0f} ms")
        new = medians["new"]["stall"]
        worst = max(run["stall"] for run in runs["new"])
        print(f"  ratio previous/now stall: {medians['previous']['stall'] / new:.1f}x; "
              f"target <= {TARGET_MS:.0f} ms: {'met' if worst * 1e3 <= TARGET_MS else 'MISSED'} "
              f"(worst run {worst * 1e3:.0f} ms)")
        for freeze in (True, False):
            rss, frozen, leaked = cold_render_memory(tmp, cells, args.renders, freeze)
            print(f"  memory over {args.renders} cold renders, {'now     ' if freeze else 'previous'} (ingesting "
                  f"meanwhile): RSS {' '.join(f'{mb:.0f}' for mb in rss)} MB; "
                  f"frozen objects at the end {frozen:,}, garbage cycles they kept {leaked:,} objects")

if __name__ == "__main__":
    main()
