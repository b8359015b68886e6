"""The sidecar's tailing path against replay, CPU per line, on the same lines with rotations.

Run by hand (never collected by pytest)::

    python tests/bench/bench_tail_vs_replay.py [--records 300000] [--rotations 4] [--rounds 3]

Generates ``--records`` canonical records (``bench_replay.generate``), then, in
this one process and alternating, ``--rounds`` times:

* **tail**: the records are written to ``app.log`` in generations; after each
  generation but the last, ``app.log`` is renamed to ``app.log.N`` and a new
  one is started (rename rotation, ``app.log*`` matched, as logrotate's
  default). The sidecar's own file source (``Tailer`` + ``SourceRunner.pump``,
  slices of ``ingest_slice_lines`` under the pipeline lock, as
  ``Sidecar.ingest_once``) follows them. Two modes: *catch-up* (a whole
  generation is written, then tailed) and *follow* (``--write-lines`` lines are
  written, tailed until caught up, and so on: many small reads, as behind a
  live gateway). Only the tailing is timed; the writes are not.
* **replay**: ``replay_files`` over the same rotated files, oldest first, one
  right after it was tailed (the two alternate every generation, so both run
  under the same load on a shared machine).

Both feed the pipeline ``replay`` builds (``replay_pipeline``: same prices,
same decoder, same ledger kind), so the difference is the tailer and dispatch.
CPU is ``time.process_time`` (watchdog off, so no inotify thread is counted);
the ratio is tail / replay per line, median over the rounds; the target is
<= 1.2. The month totals and rejections of both are checked equal.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from exporter.engine.pipeline import Pipeline
from exporter.prices.table import load_price_table
from exporter.replay.replay import read_blocks, replay_files, replay_pipeline
from exporter.sidecar.config import Config, SourceConfig
from exporter.sidecar.sources import SourceRunner
from exporter.sources.formats.registry import make_line_decoder
from exporter.sources.tail import Tailer
from tests.bench.bench_replay import PRICES, generate

TARGET = 1.2
SLICE = Config().ingest_slice_lines


class Run(NamedTuple):
    """One timed pass: CPU seconds, lines the pipeline saw, and what it counted (to compare)."""

    cpu: float
    lines: int
    totals: object


def _pipeline() -> Pipeline:
    decoder = make_line_decoder("canonical")
    return replay_pipeline(load_price_table(PRICES), decoder)


def _counted(pipeline: Pipeline) -> object:
    agg = pipeline.aggregates
    return (agg.month_totals(), sorted(agg.rejected.items()))


def _generations(lines: list[bytes], rotations: int) -> list[list[bytes]]:
    size = -(-len(lines) // (rotations + 1))
    return [lines[i : i + size] for i in range(0, len(lines), size)]


def paired_run(directory: Path, generations: list[list[bytes]], write_lines: int | None) -> tuple[Run, Run]:
    """Tail the generations as they are written and rotated, and replay each generation's file
    right after it was tailed (so both see the same load); time only the tailing and the replay."""
    pipeline = _pipeline()
    decoder = make_line_decoder("canonical", counter=pipeline.counter)
    replayed = _pipeline()
    replay_decoder = make_line_decoder("canonical", counter=replayed.counter)
    live = directory / "app.log"
    live.touch()
    config = SourceConfig(name="bench", paths=(str(directory / "app.log*"),), watch=False)
    tailer = Tailer(config.paths, max_line_bytes=config.max_line_bytes, use_watchdog=False,
                    source_name=config.name)
    runner = SourceRunner(config, tailer, decoder)
    tail_cpu = replay_cpu = 0.0
    tailed = replay_lines = 0

    def catch_up() -> int:
        got = 0
        while True:
            with pipeline.lock:
                n = runner.pump(pipeline, SLICE, 0.0)
            got += n
            if n < SLICE:
                return got

    for number, generation in enumerate(generations):
        step = write_lines or len(generation)
        fd = os.open(live, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        for i in range(0, len(generation), step):
            os.write(fd, b"".join(generation[i : i + step]))
            started = time.process_time()
            tailed += catch_up()
            tail_cpu += time.process_time() - started
        os.close(fd)
        done = live
        if number + 1 < len(generations):
            done = directory / f"app.log.{number + 1}"
            os.rename(live, done)
            live.touch()
        started = time.process_time()
        tailed += catch_up()  # after the rename: the old file's last look, the new file found
        tail_cpu += time.process_time() - started
        started = time.process_time()
        replay_lines += replay_files([str(done)], replayed, replay_decoder)
        replay_cpu += time.process_time() - started
    tailer.close()
    return Run(tail_cpu, tailed, _counted(pipeline)), Run(replay_cpu, replay_lines, _counted(replayed))


def tailer_only(directory: Path, batches: bool) -> float:
    """CPU per line of the tailer alone over the rotated files (no pipeline): ``poll_batches``, or
    ``poll`` (a TailEvent per line, as the sidecar took them before batches)."""
    tailer = Tailer([str(directory / "app.log*")], use_watchdog=False)
    poll = tailer.poll_batches if batches else tailer.poll
    started = time.process_time()
    while poll(SLICE):
        pass
    cpu = time.process_time() - started
    lines = tailer.stats().lines_read
    tailer.close()
    return cpu / lines * 1e6


def reading_only(directory: Path, count: int) -> float:
    """CPU per line of replay's own reading (``read_blocks``, no pipeline) over the same files."""
    paths = [directory / f"app.log.{n}" for n in range(1, count)] + [directory / "app.log"]
    started = time.process_time()
    lines = 0
    for path in paths:
        with open(path, "rb") as stream:
            lines += sum(len(block) for block, _unusual in read_blocks(stream))
    return (time.process_time() - started) / lines * 1e6


def measure(lines: list[bytes], rotations: int, rounds: int, write_lines: int | None,
            label: str, out: Callable[[str], None] = print) -> float:
    """Alternate tail and replay ``rounds`` times; print and return the median CPU-per-line ratio."""
    generations = _generations(lines, rotations)
    tails: list[float] = []
    replays: list[float] = []
    alone: dict[bool, list[float]] = {True: [], False: []}
    reading: list[float] = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as d:
            tail, again = paired_run(Path(d), generations, write_lines)
            for batches in (True, False):
                alone[batches].append(tailer_only(Path(d), batches))
            reading.append(reading_only(Path(d), len(generations)))
        if tail.lines != len(lines) or again.lines != len(lines):
            raise SystemExit(f"{label}: lines seen tail {tail.lines}, replay {again.lines}, written {len(lines)}")
        if tail.totals != again.totals:
            raise SystemExit(f"{label}: the tailed totals differ from replay's")
        tails.append(tail.cpu / tail.lines * 1e6)
        replays.append(again.cpu / again.lines * 1e6)
    t, r = statistics.median(tails), statistics.median(replays)
    ratio = statistics.median(a / b for a, b in zip(tails, replays, strict=True))
    out(f"tail vs replay ({label}): tail {t:.2f} us/line, replay {r:.2f} us/line, ratio {ratio:.2f} "
        f"(target <= {TARGET}; {len(lines):,} lines, {rotations} rotations, medians of {rounds}; "
        f"rounds tail {', '.join(f'{x:.2f}' for x in tails)} / replay {', '.join(f'{x:.2f}' for x in replays)})")
    batched, per_event = statistics.median(alone[True]), statistics.median(alone[False])
    out(f"  the tailer alone ({label}, no pipeline): poll_batches {batched:.2f} us/line "
        f"({batched / r:.1%} of replay's line), poll with a TailEvent per line {per_event:.2f} us/line; "
        f"replay's own reading (read_blocks) {statistics.median(reading):.2f} us/line")
    return ratio


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--rotations", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--write-lines", type=int, default=600,
                    help="follow mode: lines written between two catch-ups (600: 60k lines/s in 10 ms writes)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        source = Path(d) / "lines.jsonl"
        generate(source, args.records)
        lines = source.read_bytes().splitlines(keepends=True)
    ratios = [measure(lines, args.rotations, args.rounds, None, "catch-up"),
              measure(lines, args.rotations, args.rounds, args.write_lines, f"follow, {args.write_lines}-line writes")]
    met = all(r <= TARGET for r in ratios)
    print(f"TAIL/REPLAY worst {max(ratios):.2f} {'MET' if met else 'NOT MET'} (target <= {TARGET})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
