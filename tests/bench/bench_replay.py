"""Replay throughput: the full pipeline against bare decode loops (the ceilings).

Run by hand (never collected by pytest)::

    python tests/bench/bench_replay.py [--records 1000000] [--profile]

Generates canonical records with usage blocks deterministically into a temp
file, then times, in this one process: decoding every line with
``orjson.loads`` and nothing else, the fast path's typed msgspec decode and
nothing else, and the replay (parse, normalise usage, dedupe, price by
version, aggregate) exactly as ``replay`` runs it. Rates are per CPU second
(``time.process_time``): on a shared machine compare the replay with the
decode loops of the same run, not with another run. Target: 200,000
records/s on one core. ``--profile`` adds a cProfile of the replay (top 15
by cumulative and by own time). ``--floor-parts`` adds what each piece of the
required-work floor (``bench_ingest.REQUIRED_FLOOR``) costs on top of the
typed decode, per record: each piece alone after the decode, the pieces run
alternately, best of three rounds.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from exporter.engine.cells import CELL_WIDTH
from exporter.engine.dedupe import DedupeLedger
from exporter.engine.fastparse import _DECODER, _SIXTY, fast_usage
from exporter.engine.months import MonthOf
from exporter.engine.pipeline import Pipeline
from exporter.engine.records import parse_ts
from exporter.prices.table import load_price_table
from exporter.replay.replay import replay_files, replay_pipeline
from exporter.sources.formats.registry import make_line_decoder

PRICES = Path(__file__).resolve().parent.parent / "fixtures" / "engine" / "prices_two_versions.yaml"
TARGET = 200_000
START = 1_793_491_200  # 2026-11-01T00:00:00Z
MODELS = ("alpha", "beta", "gamma", "delta", "epsilon", "acme/alpha", "mystery-1")
METHODS = ("provider", "tiktoken:o200k_base", "tiktoken:cl100k_base", "estimate:chars/4")


def _usage(rng: random.Random, kind: int) -> str:
    a, b, c, d = (rng.randrange(1, 20000) for _ in range(4))
    if kind == 0:
        return (
            f'{{"prompt_tokens":{a + b},"completion_tokens":{c},"total_tokens":{a + b + c},'
            f'"prompt_tokens_details":{{"cached_tokens":{b}}}}}'
        )
    if kind == 1:
        return (
            f'{{"input_tokens":{a},"cache_read_input_tokens":{b},"cache_creation_input_tokens":{d},'
            f'"output_tokens":{c}}}'
        )
    if kind == 2:
        return (
            f'{{"promptTokenCount":{a + b},"cachedContentTokenCount":{b},'
            f'"candidatesTokenCount":{c},"thoughtsTokenCount":{d // 10}}}'
        )
    return (
        f'{{"inputTokens":{a},"cacheReadInputTokens":{b},"cacheWriteInputTokens":{d},'
        f'"outputTokens":{c}}}'
    )


def generate(path: Path, records: int, seed: int = 1) -> int:
    """Write ``records`` canonical lines; returns the file size in bytes."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        batch: list[str] = []
        for index in range(records):
            ts = START + index * 2  # about 23 days per million records
            before = rng.randrange(1000, 40000)
            after = before - rng.randrange(0, before // 2)
            batch.append(
                f'{{"ts":"{time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))}",'
                f'"request_id":"req-{index:08d}-{rng.getrandbits(32):08x}",'
                f'"model":"{MODELS[index % len(MODELS)]}","provider":"acme",'
                f'"tenant":"team-{index % 17}","tokens_before":{before},"tokens_after":{after},'
                f'"count_method":"{METHODS[index % len(METHODS)]}",'
                f'"usage":{_usage(rng, index % 4)}}}\n'
            )
            if len(batch) == 10000:
                out.writelines(batch)
                batch.clear()
        out.writelines(batch)
    return path.stat().st_size


def bare_loads(path: Path) -> int:
    loads = orjson.loads
    count = 0
    with path.open("rb") as stream:
        for line in stream:
            loads(line)
            count += 1
    return count


def bare_msgspec(path: Path) -> int:
    """The fast path's typed decode (usage blocks included) and nothing else."""
    decode = _DECODER.decode
    count = 0
    with path.open("rb") as stream:
        for line in stream:
            decode(line)
            count += 1
    return count


def full_replay(path: Path) -> Pipeline:
    decoder = make_line_decoder("canonical")  # what `replay` builds, text counter included
    pipeline = replay_pipeline(load_price_table(PRICES), decoder)
    replay_files([str(path)], pipeline, decoder)
    return pipeline


def _decode_only(lines: list[bytes]) -> None:
    decode = _DECODER.decode
    for line in lines:
        decode(line)


def _with_timestamp_and_month(lines: list[bytes]) -> None:
    decode: Callable[[bytes], Any] = _DECODER.decode  # a typed line; its fields are known here
    sixty, month_of = _SIXTY, MonthOf("UTC")
    last_minute, last_start, slot_start, slot_end = "-", 0, 0.0, 0.0
    for line in lines:  # as REQUIRED_FLOOR does it (and replay)
        text = decode(line).ts
        if not text.startswith(last_minute):
            last_minute = text[:17]
            last_start = int(parse_ts(last_minute + "00Z"))
        ts = float(last_start + sixty[text[17:19]])
        if not slot_start <= ts < slot_end:
            slot_start = ts // 900 * 900
            slot_end, _month = slot_start + 900, month_of(ts)


def _with_ledger(lines: list[bytes]) -> None:
    decode: Callable[[bytes], Any] = _DECODER.decode
    seen_before = DedupeLedger(40.0, stable=False).seen_before
    ts = float(START)
    for line in lines:
        seen_before(decode(line).request_id, ts)
        ts += 2.0  # the records' own spacing: the ledger files them hour by hour


def _with_usage(lines: list[bytes]) -> None:
    decode: Callable[[bytes], Any] = _DECODER.decode
    usage_of = fast_usage
    for line in lines:
        usage_of(decode(line).usage)


def _with_cell(lines: list[bytes]) -> None:
    decode: Callable[[bytes], Any] = _DECODER.decode
    cells: dict[tuple[str, str, object, object, object], list[int]] = {}
    for line in lines:
        raw = decode(line)
        key = ("2026-11", raw.model, raw.provider, raw.tenant, raw.count_method)
        cell = cells.get(key)
        if cell is None:
            cell = cells[key] = [0] * CELL_WIDTH
        before, after = raw.tokens_before, raw.tokens_after
        cell[0] += 1
        cell[1] += after  # eight additions as the floor's (the tiers' values do not change the cost)
        cell[2] += after
        cell[3] += after
        cell[4] += after
        cell[5] += after
        cell[8] += before
        cell[10] += after


FLOOR_PARTS: dict[str, Callable[[list[bytes]], None]] = {
    "typed decode alone": _decode_only,
    "+ timestamp and month": _with_timestamp_and_month,
    "+ dedupe ledger (seen_before)": _with_ledger,
    "+ usage normaliser (fast_usage)": _with_usage,
    "+ cell lookup and 8 additions": _with_cell,
}


def floor_parts(path: Path, rounds: int = 3) -> dict[str, float]:
    """CPU microseconds per record of each ``FLOOR_PARTS`` loop over the lines of ``path`` (best of ``rounds``)."""
    lines = path.read_bytes().split(b"\n")[:-1]
    best = dict.fromkeys(FLOOR_PARTS, float("inf"))
    for _ in range(rounds):
        for name, work in FLOOR_PARTS.items():
            cpu = time.process_time()
            work(lines)
            best[name] = min(best[name], (time.process_time() - cpu) * 1e6 / len(lines))
    return best


def _timed(label: str, records: int, work: Callable[[], object]) -> float:
    """Run ``work``; print wall and CPU rates; return records per CPU second.

    CPU time (``process_time``) is the one-core figure: on a shared machine the
    wall clock also counts the time other processes held the core.
    """
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"{label:<18}: {records / cpu:>10,.0f} records/CPU-s  "
        f"({records / wall:>10,.0f} records/s wall, {cpu:.1f}s CPU)"
    )
    return records / cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile the replay: top 15 by cumtime and by tottime",
    )
    parser.add_argument("--floor-parts", action="store_true",
                        help="the required-work floor's pieces, each after the typed decode, per record")
    args = parser.parse_args(argv)
    n = args.records
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "bench.jsonl"
        started = time.perf_counter()
        size = generate(path, n)
        print(
            f"generated {n:,} records ({size / 1e6:.0f} MB) in {time.perf_counter() - started:.1f}s"
        )

        ceiling = _timed("orjson.loads loop", n, lambda: bare_loads(path))
        typed = _timed("msgspec typed loop", n, lambda: bare_msgspec(path))
        result: list[Pipeline] = []
        rate = _timed("full replay", n, lambda: result.append(full_replay(path)))
        totals = result[0].aggregates.month_totals()
        assert sum(m["requests"] for m in totals.values()) == n, "every record must count"
        verdict = "meets" if rate >= TARGET else "misses"
        print(f"replay / ceiling     : {rate / ceiling:.2f}  (the replay costs {ceiling / rate:.1f} orjson decodes)")
        print(f"replay / typed loop  : {rate / typed:.2f}  (the replay costs {typed / rate:.1f} typed decodes)")
        print(f"result: {rate:,.0f} records/CPU-s; the replay {verdict} the {TARGET:,} records/CPU-s target")
        print(f"        at a quiet machine's ~1,000,000 typed decodes/s that ratio gives "
              f"~{1_000_000 * rate / typed:,.0f} records/s")

        if args.floor_parts:
            parts = floor_parts(path)
            decode = parts["typed decode alone"]
            print("the required-work floor, piece by piece (CPU per record, best of 3, each piece alone after the "
                  "decode):")
            for name, us in parts.items():
                extra = "" if name == "typed decode alone" else (
                    f"  ({us - decode:+.2f} us = {(us - decode) / decode:.2f} decodes)")
                print(f"  {name:<32} {us:5.2f} us{extra}")
            print(f"  the pieces together add {sum(parts.values()) - len(parts) * decode:.2f} us to a {decode:.2f} us "
                  f"decode: at 0.5 of the typed loop they could add {decode:.2f} us at most")

        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            full_replay(path)
            profiler.disable()
            report = io.StringIO()
            stats = pstats.Stats(profiler, stream=report)
            stats.sort_stats("cumulative").print_stats(15)
            stats.sort_stats("tottime").print_stats(15)
            print(report.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
